package rlock

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/goredisson/goredisson/internal/redistest"
)

// An Unlock with the wrong owner of the same client is loud: the error says another owner
// of this client holds the lock, a warning is logged once per call, and the real hold is
// untouched.
func TestUnlockByAnotherOwnerOfThisClient(t *testing.T) {
	var logs syncBuffer
	c, rc := newClient(t, redistest.Shared(t), Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	name := lockName(t)
	l := newLock(t, c, name)
	base := testCtx(t, 10*time.Second)
	holder, wrong := NewOwner(base), NewOwner(base)
	require.NoError(t, l.Lock(holder))

	err := l.Unlock(wrong)
	require.ErrorIs(t, err, ErrNotHeld)
	assert.Contains(t, err.Error(), "held by another owner of this client")
	assert.Contains(t, err.Error(), `Unlock "`+name+`"`)
	assert.Equal(t, 1, strings.Count(logs.String(), "Unlock by an owner that does not hold the lock"))
	assert.Equal(t, map[string]string{c.field(mustOwner(t, holder)): "1"}, hgetall(t, rc, name), "the real hold is untouched")

	err = l.Unlock(wrong)
	require.ErrorIs(t, err, ErrNotHeld)
	assert.Equal(t, 2, strings.Count(logs.String(), "Unlock by an owner that does not hold the lock"), "one warning per call")

	require.NoError(t, l.Unlock(holder))
	err = l.Unlock(wrong)
	require.ErrorIs(t, err, ErrNotHeld)
	assert.NotContains(t, err.Error(), "another owner", "nobody holds it now")
}

func mustOwner(t *testing.T, ctx context.Context) Owner {
	o, ok := OwnerFrom(ctx)
	require.True(t, ok)
	return o
}

// Every error of a lock call names the call and the lock, and matches its sentinel.
func TestErrorsNameCallAndLock(t *testing.T) {
	srv := redistest.Shared(t)
	c, _ := newClient(t, srv, Options{})
	other, _ := newClient(t, srv, Options{})
	name := lockName(t)
	l := newLock(t, c, name)
	base := testCtx(t, 10*time.Second)
	a, b := NewOwner(base), NewOwner(base)
	require.NoError(t, other.NewLock(name).Lock(b))

	for _, tc := range []struct {
		err      error
		sentinel error
		text     string
	}{
		{l.TryLock(a, 0, 0), ErrLocked, `rlock: TryLock "` + name + `": held by another owner`},
		{l.TryLock(a, -1, 0), ErrInvalidWait, `rlock: TryLock "` + name + `": invalid wait`},
		{l.LockFor(a, 0), ErrInvalidLease, `rlock: LockFor "` + name + `": invalid lease`},
		{l.Unlock(a), ErrNotHeld, `rlock: Unlock "` + name + `": not held by this owner`},
		{l.Lock(base), ErrNoOwner, `rlock: Lock "` + name + `": context carries no owner`},
		{c.NewLock("").Lock(a), ErrEmptyName, `rlock: Lock "": empty lock name`},
		{l.TryDo(a, 0, func(context.Context) error { return nil }), ErrLocked, `rlock: TryDo "` + name + `": held by another owner`},
	} {
		assert.ErrorIs(t, tc.err, tc.sentinel)
		if assert.Error(t, tc.err) {
			assert.True(t, strings.HasPrefix(tc.err.Error(), tc.text), "%q starts with %q", tc.err, tc.text)
		}
	}
	_, _, err := l.Held(a)
	assert.ErrorIs(t, err, ErrNotHeld)
	assert.EqualError(t, err, `rlock: Held "`+name+`": not held by this owner`)

	cancelled, cancel := context.WithCancel(a)
	cancel()
	err = l.Lock(cancelled)
	assert.ErrorIs(t, err, context.Canceled)
	assert.EqualError(t, err, `rlock: Lock "`+name+`": context canceled`)
}

func TestInvalidOptionNamesField(t *testing.T) {
	rc := redistest.Shared(t).Client(t)
	ctx := testCtx(t, 10*time.Second)
	for _, tc := range []struct {
		opts  Options
		field string
	}{
		{Options{WatchdogTimeout: -time.Second}, "WatchdogTimeout"},
		{Options{WatchdogTimeout: time.Millisecond}, "WatchdogTimeout"},
		{Options{RenewBatchSize: -1}, "RenewBatchSize"},
		{Options{UnlockLatchTTL: -1}, "UnlockLatchTTL"},
		{Options{ReleaseTimeout: -1}, "ReleaseTimeout"},
		{Options{ReplicaSync: ReplicaSyncMode(9)}, "ReplicaSync"},
		{Options{ReplicaSync: -1}, "ReplicaSync"},
		{Options{ReplicaSyncTimeout: -time.Second}, "ReplicaSyncTimeout"},
		{Options{ReplicaSyncTimeout: 500 * time.Microsecond}, "ReplicaSyncTimeout"},
		{Options{HoldWarning: -1}, "HoldWarning"},
		{Options{PubSub: PubSubMode(9)}, "PubSub"},
	} {
		_, err := New(ctx, rc, tc.opts)
		assert.ErrorIs(t, err, ErrInvalidOptions)
		if assert.Error(t, err) {
			assert.Contains(t, err.Error(), tc.field)
		}
	}
}

// The causes of a lost hold are rlock sentinels.
func TestLostCausesAreRlockSentinels(t *testing.T) {
	srv := redistest.Shared(t)
	c, _ := newClient(t, srv, Options{})
	name := lockName(t)
	l := newLock(t, c, name)
	ctx := NewOwner(testCtx(t, 10*time.Second))

	require.NoError(t, l.Lock(ctx))
	work, stop, err := l.Held(ctx)
	require.NoError(t, err)
	defer stop()
	_, err = l.ForceUnlock(ctx)
	require.NoError(t, err)
	<-work.Done()
	cause := context.Cause(work)
	assert.ErrorIs(t, cause, ErrLockLost)
	assert.ErrorIs(t, cause, ErrForceUnlocked)
	assert.False(t, errors.Is(cause, ErrReleased))

	require.NoError(t, l.Lock(ctx))
	work2, stop2, err := l.Held(ctx)
	require.NoError(t, err)
	defer stop2()
	c.Close()
	<-work2.Done()
	assert.ErrorIs(t, context.Cause(work2), ErrLockLost)
	assert.ErrorIs(t, context.Cause(work2), ErrClosed)
}
