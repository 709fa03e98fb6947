package rlock

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/goredisson/goredisson/internal/redistest"
)

// TestLayoutMatchesRedisson checks the hash a Go holder writes: one field
// "<client-uuid>:<owner>" with the reentry count, PEXPIRE = the watchdog timeout.
func TestLayoutMatchesRedisson(t *testing.T) {
	srv := redistest.Shared(t)
	c, rc := newClient(t, srv, Options{})
	name := lockName(t)
	l := newLock(t, c, name)
	ctx := NewOwner(testCtx(t, 10*time.Second))
	o, _ := OwnerFrom(ctx)

	require.NoError(t, l.Lock(ctx))
	require.NoError(t, l.Lock(ctx))
	assert.Equal(t, map[string]string{c.ID() + ":" + o.String(): "2"}, hgetall(t, rc, name))
	assert.Regexp(t, `^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`, c.ID())
	assert.InDelta(t, 30000, pttl(t, rc, name), 1000)
	require.NoError(t, l.Unlock(ctx))
	require.NoError(t, l.Unlock(ctx))
	assert.Empty(t, hgetall(t, rc, name))
}

func TestHoldCount(t *testing.T) { // RL-13
	c, _ := newClient(t, redistest.Shared(t), Options{})
	l := newLock(t, c, lockName(t))
	ctx := NewOwner(testCtx(t, 10*time.Second))
	count := func() int {
		n, err := l.HoldCount(ctx)
		require.NoError(t, err)
		return n
	}
	assert.Equal(t, 0, count())
	require.NoError(t, l.Lock(ctx))
	assert.Equal(t, 1, count())
	require.NoError(t, l.Unlock(ctx))
	assert.Equal(t, 0, count())
	require.NoError(t, l.Lock(ctx))
	require.NoError(t, l.Lock(ctx))
	assert.Equal(t, 2, count())
	require.NoError(t, l.Unlock(ctx))
	assert.Equal(t, 1, count())
	require.NoError(t, l.Unlock(ctx))
	assert.Equal(t, 0, count())
}

func TestIsHeldAndIsLocked(t *testing.T) { // RL-14, RL-15, RL-16, RL-18
	c, _ := newClient(t, redistest.Shared(t), Options{})
	l := newLock(t, c, lockName(t))
	base := testCtx(t, 10*time.Second)
	a, b := NewOwner(base), NewOwner(base)
	state := func(ctx context.Context) (held, locked bool) {
		held, err := l.IsHeld(ctx)
		require.NoError(t, err)
		locked, err = l.IsLocked(ctx)
		require.NoError(t, err)
		return held, locked
	}
	held, locked := state(a)
	assert.False(t, held)
	assert.False(t, locked)
	require.NoError(t, l.Lock(a))
	held, locked = state(a)
	assert.True(t, held)
	assert.True(t, locked)
	held, locked = state(b)
	assert.False(t, held, "another owner does not hold it")
	assert.True(t, locked, "another owner sees it locked")
	require.NoError(t, l.Unlock(a))
	held, locked = state(a)
	assert.False(t, held)
	assert.False(t, locked)
	held, locked = state(b)
	assert.False(t, held)
	assert.False(t, locked)
}

func TestLockUnlockTwice(t *testing.T) { // RL-20
	c, rc := newClient(t, redistest.Shared(t), Options{})
	name := lockName(t)
	l := newLock(t, c, name)
	ctx := NewOwner(testCtx(t, 10*time.Second))
	for range 2 {
		require.NoError(t, l.Lock(ctx))
		require.NoError(t, l.Unlock(ctx))
	}
	assert.Equal(t, int64(-2), pttl(t, rc, name))
}

func TestReentrancyKeepsOthersOut(t *testing.T) { // RL-21
	c, _ := newClient(t, redistest.Shared(t), Options{})
	l := newLock(t, c, lockName(t))
	base := testCtx(t, 10*time.Second)
	a, b := NewOwner(base), NewOwner(base)
	require.NoError(t, l.TryLock(a, 0, 0))
	require.NoError(t, l.TryLock(a, 0, 0))
	require.NoError(t, l.Unlock(a))
	assert.ErrorIs(t, l.TryLock(b, 0, 0), ErrLocked, "hold count is still 1")
	require.NoError(t, l.Unlock(a))
	require.NoError(t, l.TryLock(b, 0, 0))
	require.NoError(t, l.Unlock(b))
}

func TestUnlockByNonHolder(t *testing.T) { // RL-19
	c, _ := newClient(t, redistest.Shared(t), Options{})
	l := newLock(t, c, lockName(t))
	base := testCtx(t, 10*time.Second)
	a, b := NewOwner(base), NewOwner(base)
	assert.ErrorIs(t, l.Unlock(a), ErrNotHeld, "never held")
	require.NoError(t, l.LockFor(a, time.Second))
	assert.ErrorIs(t, l.Unlock(b), ErrNotHeld, "held by another owner")
	held, err := l.IsHeld(a)
	require.NoError(t, err)
	assert.True(t, held, "a failed unlock leaves the holder's lock alone")
	require.NoError(t, l.Unlock(a))
}

func TestForceUnlock(t *testing.T) { // RL-08
	c, _ := newClient(t, redistest.Shared(t), Options{})
	name := lockName(t)
	l := newLock(t, c, name)
	ctx := NewOwner(testCtx(t, 10*time.Second))
	require.NoError(t, l.Lock(ctx))
	ok, err := l.ForceUnlock(ctx)
	require.NoError(t, err)
	assert.True(t, ok)
	locked, err := l.IsLocked(ctx)
	require.NoError(t, err)
	assert.False(t, locked)
	assert.Equal(t, 0, c.holds.count(), "force-unlock stops local renewal")
	fresh := newLock(t, c, name)
	locked, err = fresh.IsLocked(ctx)
	require.NoError(t, err)
	assert.False(t, locked)
	ok, err = l.ForceUnlock(ctx)
	require.NoError(t, err)
	assert.False(t, ok, "nothing to delete")
}

func TestExpiredLeaseIsTakenAndUnlockFails(t *testing.T) { // RL-09
	c, _ := newClient(t, redistest.Shared(t), Options{})
	l := newLock(t, c, lockName(t))
	base := testCtx(t, 10*time.Second)
	a, b := NewOwner(base), NewOwner(base)
	start := time.Now()
	require.NoError(t, l.LockFor(a, 2*time.Second))
	require.NoError(t, l.Lock(b), "the waiter gets the lock when the lease runs out, with no publish")
	took := time.Since(start)
	assert.GreaterOrEqual(t, took, 1900*time.Millisecond)
	assert.Less(t, took, 2500*time.Millisecond)
	assert.ErrorIs(t, l.Unlock(a), ErrNotHeld, "unlocking an expired lock is an error")
	require.NoError(t, l.Unlock(b))
}

func TestRemainTTL(t *testing.T) { // RL-10
	c, _ := newClient(t, redistest.Shared(t), Options{})
	l := newLock(t, c, lockName(t))
	ctx := NewOwner(testCtx(t, 10*time.Second))
	ttl := func() time.Duration {
		d, err := l.RemainTTL(ctx)
		require.NoError(t, err)
		return d
	}
	require.NoError(t, l.LockFor(ctx, time.Hour))
	assert.InDelta(t, float64(time.Hour), float64(ttl()), float64(100*time.Millisecond))
	require.NoError(t, l.Unlock(ctx))
	_, err := l.RemainTTL(ctx)
	assert.ErrorIs(t, err, ErrNotLocked, "no lock is not 0 ms left")
	require.NoError(t, l.Lock(ctx))
	assert.InDelta(t, float64(30*time.Second), float64(ttl()), float64(100*time.Millisecond),
		"an earlier explicit lease does not leak into a watchdog acquisition")
	require.NoError(t, l.Unlock(ctx))
}

func TestReentrantUnlockKeepsLease(t *testing.T) { // RL-05
	c, _ := newClient(t, redistest.Shared(t), Options{})
	l := newLock(t, c, lockName(t))
	ctx := NewOwner(testCtx(t, 10*time.Second))
	for range 3 {
		require.NoError(t, l.LockFor(ctx, 10*time.Second))
	}
	require.NoError(t, l.Unlock(ctx))
	require.NoError(t, l.Unlock(ctx))
	d, err := l.RemainTTL(ctx)
	require.NoError(t, err)
	assert.GreaterOrEqual(t, d, 9*time.Second)
	assert.LessOrEqual(t, d, 10*time.Second)
	require.NoError(t, l.Unlock(ctx))
}

func TestTryLockWaitElapses(t *testing.T) { // RL-06 shape, with a short wait
	c, _ := newClient(t, redistest.Shared(t), Options{})
	l := newLock(t, c, lockName(t))
	base := testCtx(t, 10*time.Second)
	a, b := NewOwner(base), NewOwner(base)
	require.NoError(t, l.Lock(a))
	start := time.Now()
	assert.ErrorIs(t, l.TryLock(b, 300*time.Millisecond, 0), ErrLocked)
	took := time.Since(start)
	assert.GreaterOrEqual(t, took, 290*time.Millisecond)
	assert.Less(t, took, time.Second)
	require.NoError(t, l.Unlock(a))
}

func TestBadInput(t *testing.T) {
	srv := redistest.Shared(t)
	rc := srv.Client(t)
	ctx := testCtx(t, 10*time.Second)

	_, err := New(ctx, nil, Options{})
	assert.ErrorIs(t, err, ErrNilClient)
	_, err = New(ctx, rc, Options{WatchdogTimeout: -time.Second})
	assert.ErrorIs(t, err, ErrInvalidOptions)
	_, err = New(ctx, rc, Options{RenewBatchSize: -1})
	assert.ErrorIs(t, err, ErrInvalidOptions)
	_, err = New(ctx, rc, Options{PubSub: PubSubMode(9)})
	assert.ErrorIs(t, err, ErrInvalidOptions)

	c, _ := newClient(t, srv, Options{})
	owned := NewOwner(ctx)
	assert.ErrorIs(t, c.NewLock("").Lock(owned), ErrEmptyName)
	l := newLock(t, c, lockName(t))
	assert.ErrorIs(t, l.TryLock(owned, -time.Second, 0), ErrInvalidWait)
	assert.ErrorIs(t, l.TryLock(owned, 0, -time.Second), ErrInvalidLease)
	assert.ErrorIs(t, l.LockFor(owned, 0), ErrInvalidLease)
	assert.ErrorIs(t, l.LockFor(owned, -time.Second), ErrInvalidLease)

	// No owner in ctx.
	assert.ErrorIs(t, l.Lock(ctx), ErrNoOwner)
	assert.ErrorIs(t, l.Unlock(ctx), ErrNoOwner)
	_, err = l.HoldCount(ctx)
	assert.ErrorIs(t, err, ErrNoOwner)
	_, err = l.IsHeld(ctx)
	assert.ErrorIs(t, err, ErrNoOwner)
	_, _, err = l.Held(ctx)
	assert.ErrorIs(t, err, ErrNoOwner)

	// A cancelled ctx acquires nothing.
	cancelled, cancel := context.WithCancel(owned)
	cancel()
	assert.ErrorIs(t, l.Lock(cancelled), context.Canceled)
	locked, err := l.IsLocked(ctx)
	require.NoError(t, err)
	assert.False(t, locked)

	// Closed client.
	require.NoError(t, l.Lock(owned))
	c.Close()
	assert.ErrorIs(t, l.Lock(owned), ErrClosed)
	assert.ErrorIs(t, l.Unlock(owned), ErrClosed)
	_, err = l.IsLocked(owned)
	assert.ErrorIs(t, err, ErrClosed)
	_, err = l.ForceUnlock(owned)
	assert.ErrorIs(t, err, ErrClosed)
	assert.ErrorIs(t, c.NewLock("x").Lock(owned), ErrClosed)
	c.Close() // idempotent
}

func TestUnlockWithCancelledContext(t *testing.T) {
	c, rc := newClient(t, redistest.Shared(t), Options{})
	name := lockName(t)
	l := newLock(t, c, name)
	ctx, cancel := context.WithCancel(NewOwner(context.Background()))
	require.NoError(t, l.Lock(ctx))
	cancel()
	require.NoError(t, l.Unlock(ctx), "unlock runs even when the caller's ctx has ended")
	assert.Empty(t, hgetall(t, rc, name))
	assert.Equal(t, 0, c.holds.count())
}

func TestOwnerHandOff(t *testing.T) {
	c, _ := newClient(t, redistest.Shared(t), Options{})
	l := newLock(t, c, lockName(t))
	ctx := NewOwner(testCtx(t, 10*time.Second))
	require.NoError(t, l.Lock(ctx))
	o, ok := OwnerFrom(ctx)
	require.True(t, ok)
	done := make(chan error, 1)
	go func() { // another goroutine continues as the same owner
		done <- l.Unlock(WithOwner(context.Background(), o))
	}()
	require.NoError(t, <-done)
	held, err := l.IsHeld(ctx)
	require.NoError(t, err)
	assert.False(t, held)
}

func TestErrorsAreDistinct(t *testing.T) {
	all := []error{ErrClosed, ErrNilClient, ErrEmptyName, ErrInvalidLease, ErrInvalidWait,
		ErrInvalidOptions, ErrNoOwner, ErrLocked, ErrNotHeld, ErrLockLost, ErrReleased, ErrNotReplicated, ErrReentry}
	for i, a := range all {
		for j, b := range all {
			assert.Equal(t, i == j, errors.Is(a, b), "%v vs %v", a, b)
		}
	}
}

func TestUnlockLatchesAreDeleted(t *testing.T) {
	c, rc := newClient(t, redistest.Shared(t), Options{})
	name := lockName(t)
	l := newLock(t, c, name)
	ctx := NewOwner(testCtx(t, 10*time.Second))
	for range 20 {
		require.NoError(t, l.Lock(ctx))
		require.NoError(t, l.Unlock(ctx))
	}
	latches := func() []string {
		ks, err := rc.Do(ctx, rc.B().Keys().Pattern("redisson_unlock_latch:{"+name+"}:*").Build()).AsStrSlice()
		require.NoError(t, err)
		return ks
	}
	require.Eventually(t, func() bool { return len(latches()) == 0 }, 2*time.Second, 10*time.Millisecond,
		"latches are deleted in the background, long before their 20 s TTL")
}
