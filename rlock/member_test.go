package rlock

import (
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/goredisson/goredisson/internal/redistest"
)

// TestRedLockMemberDownAtStart builds a RedLock of five servers while one is down (its port
// closed): the RedLock acquires with the other four, excludes a second owner, and takes the
// fifth lock too once a server answers on that port.
func TestRedLockMemberDownAtStart(t *testing.T) {
	srvs := startServers(t, 5)
	down := srvs[4]
	down.Kill(t)
	ctx := redistest.Context(t, testTimeout)
	name := redistest.Name(t)
	locks := make([]*Lock, len(srvs))
	for i, s := range srvs {
		c, rc, err := ConnectMember(ctx, rueidis.ClientOption{InitAddress: []string{s.Addr}, DisableCache: true},
			Options{ReleaseTimeout: 300 * time.Millisecond})
		require.NoError(t, err, "member %d (%s)", i, s.Addr)
		t.Cleanup(rc.Close)
		t.Cleanup(c.Close) // before rc's: cleanups run last-in first-out
		locks[i] = c.NewLock(name)
	}
	red, err := NewRedLock(locks...)
	require.NoError(t, err)
	heldOn := func(i int) bool { return redistest.Exists(t, srvs[i].Client(t), name) }

	// A RedLock keeps at least a majority, and may give up a server that is slow to answer.
	first, other := NewOwner(ctx), NewOwner(ctx)
	_, err = red.Lock(first)
	require.NoError(t, err, "a majority of five with one down")
	live := 0
	for i := range 4 {
		if heldOn(i) {
			live++
		}
	}
	assert.GreaterOrEqual(t, live, 3, "held on a majority of the live servers")
	_, err = red.TryLock(other, 0, 0)
	assert.ErrorIs(t, err, ErrLocked, "held by the first owner")
	require.NoError(t, red.Unlock(first))

	down.Restart(t)
	assert.True(t, redistest.Poll(10*time.Second, 10*time.Millisecond, func() bool {
		second := NewOwner(ctx)
		_, err := red.Lock(second)
		require.NoError(t, err)
		defer func() { require.NoError(t, red.Unlock(second)) }()
		return heldOn(4)
	}), "the fifth server's lock is taken once it answers again")
}

func TestConnectMemberOneServer(t *testing.T) {
	for _, addrs := range [][]string{nil, {"127.0.0.1:1", "127.0.0.1:2"}} {
		_, _, err := ConnectMember(t.Context(), rueidis.ClientOption{InitAddress: addrs}, Options{})
		assert.ErrorIs(t, err, ErrInvalidOptions, "%v", addrs)
	}
}
