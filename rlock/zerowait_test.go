package rlock

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/goredisson/goredisson/internal/redistest"
)

// TestGroupZeroWaitStoppedServers: a single attempt (no wait) does not wait for stopped
// servers (SIGSTOP) longer than memberGrace once its outcome is known or its wait has
// passed: with the group held elsewhere on the running servers it is refused at once;
// with a majority free on the running servers it acquires; without a majority of running
// servers it fails with ErrNoQuorum, and the stopped servers keep nothing of it once they
// resume (a late request that a stopped server runs on resume takes a hold that its 2 s
// lease ends). ReleaseTimeout is 5 s, the bound these calls used to wait for.
func TestGroupZeroWaitStoppedServers(t *testing.T) {
	srvs := startServers(t, 5)
	ctx := redistest.Context(t, testTimeout)
	const name = "redlock:zero-wait"
	r, err := NewRedLock(groupOn(t, srvs, name, Options{ReleaseTimeout: 5 * time.Second})...)
	require.NoError(t, err)
	m, err := NewMultiLock(r.Locks()...)
	require.NoError(t, err)
	const bound = 2 * time.Second // far below ReleaseTimeout, far above memberGrace
	a, b := NewOwner(ctx), NewOwner(ctx)

	// a takes all five (a RedLock's single attempt may keep only a majority when a server is
	// slow to answer).
	require.NoError(t, m.TryLock(a, 10*time.Second, 20*time.Second))
	srvs[3].Pause(t)
	srvs[4].Pause(t)
	start := time.Now()
	_, err = r.TryLock(b, 0, 2*time.Second)
	assert.ErrorIs(t, err, ErrLocked, "the running servers say a holds it")
	assert.Less(t, time.Since(start), bound, "RedLock refused without waiting for the stopped servers")
	start = time.Now()
	err = m.TryLock(b, 0, 2*time.Second)
	assert.ErrorIs(t, err, ErrLocked)
	assert.Less(t, time.Since(start), bound, "MultiLock refused without waiting for the stopped servers")

	require.NoError(t, r.Unlock(a), "released on the running servers")
	start = time.Now()
	_, err = r.TryLock(b, 0, 2*time.Second)
	require.NoError(t, err, "a majority of running servers")
	assert.Less(t, time.Since(start), bound)
	require.NoError(t, r.Unlock(b))

	srvs[2].Pause(t)
	start = time.Now()
	_, err = r.TryLock(b, 0, 2*time.Second)
	assert.ErrorIs(t, err, ErrNoQuorum, "two running servers of five")
	assert.Less(t, time.Since(start), bound)
	for _, i := range []int{2, 3, 4} {
		srvs[i].Resume(t)
	}
	require.True(t, redistest.Poll(10*time.Second, 10*time.Millisecond, holdsNone(r.Locks(), b)),
		"b holds nothing on any server once they resume")
}

// TestMultiLockZeroWaitFirstServerStopped: a MultiLock's single attempt tries its first lock
// alone; with that lock's server SIGSTOPped it fails (the request abandoned memberGrace after
// the call started) far below ReleaseTimeout, as with a wait; once the server resumes, a
// hold the abandoned request took is given back, and another owner takes the group.
func TestMultiLockZeroWaitFirstServerStopped(t *testing.T) {
	srvs := startServers(t, 3)
	ctx := redistest.Context(t, testTimeout)
	m, err := NewMultiLock(groupOn(t, srvs, "multilock:zero-wait-first", Options{ReleaseTimeout: 5 * time.Second})...)
	require.NoError(t, err)
	const bound = 2 * time.Second // far below ReleaseTimeout, far above memberGrace
	a, b := NewOwner(ctx), NewOwner(ctx)

	srvs[0].Pause(t)
	for _, wait := range []time.Duration{0, 100 * time.Millisecond} {
		start := time.Now()
		err = m.TryLock(a, wait, 2*time.Second)
		assert.ErrorIs(t, err, errNoReply, "wait %v", wait)
		assert.Less(t, time.Since(start), bound, "wait %v: the stopped server did not hold the call up", wait)
	}
	srvs[0].Resume(t)
	require.True(t, redistest.Poll(10*time.Second, 10*time.Millisecond, holdsNone(m.Locks(), a)),
		"a holds nothing once the server resumes")
	require.NoError(t, m.TryLock(b, 5*time.Second, 0))
	require.NoError(t, m.Unlock(b))
}

// holdsNone returns a condition for redistest.Poll: owner holds none of locks.
func holdsNone(locks []*Lock, owner context.Context) func() bool {
	return func() bool {
		for _, l := range locks {
			if n, err := l.HoldCount(owner); err != nil || n != 0 {
				return false
			}
		}
		return true
	}
}
