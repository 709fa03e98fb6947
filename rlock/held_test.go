package rlock

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/goredisson/goredisson/internal/redistest"
)

// A re-entry with a shorter explicit lease moves safe-until earlier: Held ends before
// another owner can acquire.
func TestReentryShorterLeaseEndsHeldFirst(t *testing.T) {
	f := newFixture(t, Options{})
	l, other := f.l, f.otherLock(t)
	a, b := f.owners()

	require.NoError(t, l.LockFor(a, 3*time.Second))
	work := mustHeld(t, l, a)
	ended := make(chan time.Time, 1)
	go func() { <-work.Done(); ended <- time.Now() }()
	require.NoError(t, l.LockFor(a, 300*time.Millisecond))

	require.NoError(t, other.TryLock(b, 5*time.Second, 0), "the shorter lease runs out")
	got := time.Now()
	select {
	case at := <-ended:
		assert.True(t, at.Before(got), "Held ended %v before the other owner acquired", got.Sub(at))
	default:
		t.Fatal("another owner acquired while Held was still alive")
	}
	assert.ErrorIs(t, context.Cause(work), ErrLockLost)
	assert.ErrorIs(t, context.Cause(work), ErrLeaseExpired)
}

// A re-entry with a longer explicit lease moves safe-until later: Held outlives the first
// lease, and the lock stays held.
func TestReentryLongerLeaseKeepsHeld(t *testing.T) {
	f := newFixture(t, Options{})
	l, other := f.l, f.otherLock(t)
	a, b := f.owners()

	require.NoError(t, l.LockFor(a, 300*time.Millisecond))
	work := mustHeld(t, l, a)
	require.NoError(t, l.LockFor(a, 3*time.Second))
	first := time.Now().Add(300 * time.Millisecond)

	// Past the first lease: the other owner still cannot acquire, and Held is alive.
	assert.ErrorIs(t, other.TryLock(b, time.Until(first)+300*time.Millisecond, 0), ErrLocked)
	assert.NoError(t, work.Err(), "Held outlives the first lease")
	assert.Greater(t, redistest.PTTL(t, f.rc, f.name), int64(1000))
	require.NoError(t, l.Unlock(a))
	assert.NoError(t, work.Err(), "one hold remains")
	require.NoError(t, l.Unlock(a))
	<-work.Done()
	assert.ErrorIs(t, context.Cause(work), ErrReleased)
}

// A watchdog hold's safe-until follows each successful renewal, so Held stays alive as long
// as renewal succeeds, well past the first lease.
func TestWatchdogRenewalMovesSafeUntil(t *testing.T) {
	f := newFixture(t, Options{WatchdogTimeout: 300 * time.Millisecond})
	c, l, ctx := f.c, f.l, f.ctx
	require.NoError(t, l.Lock(ctx))
	work := mustHeld(t, l, ctx)
	renewed := c.wheel.Stats().Renewed
	require.Eventually(t, func() bool { return c.wheel.Stats().Renewed >= renewed+10 }, 10*time.Second, 5*time.Millisecond,
		"ten renewals, over three leases")
	assert.NoError(t, work.Err(), "Held is alive while renewal succeeds")
	require.NoError(t, l.Unlock(ctx))
	assert.ErrorIs(t, context.Cause(work), ErrReleased)
}

func TestSafeUntil(t *testing.T) {
	sent := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		lease, margin time.Duration
	}{
		{30 * time.Second, 300*time.Millisecond + driftMargin},
		{time.Second, 10*time.Millisecond + driftMargin},
		{100 * time.Millisecond, time.Millisecond + driftMargin},
	} {
		assert.Equal(t, sent.Add(tc.lease-tc.margin), safeUntil(sent, tc.lease), "lease %v", tc.lease)
	}
}
