package rlock

import (
	"context"
	"errors"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/goredisson/goredisson/internal/redistest"
)

// holdFor polls, for d, that the owner still holds the lock and that held is not done.
func holdFor(t *testing.T, l *Lock, ctx, held context.Context, d time.Duration) {
	t.Helper()
	for end := time.Now().Add(d); time.Now().Before(end); {
		ok, err := l.IsHeld(ctx)
		require.NoError(t, err)
		require.True(t, ok, "the lock expired while its holder was working")
		require.NoError(t, held.Err())
		select {
		case <-held.Done():
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func TestWatchdogKeepsLockAlive(t *testing.T) {
	f := newFixture(t, Options{WatchdogTimeout: time.Second})
	l, ctx := f.l, f.ctx
	require.NoError(t, l.Lock(ctx))
	held := mustHeld(t, l, ctx)
	holdFor(t, l, ctx, held, 5*time.Second)
	assert.GreaterOrEqual(t, f.c.wheel.Stats().Renewed, uint64(10))
	require.NoError(t, l.Unlock(ctx))
	<-held.Done()
	assert.ErrorIs(t, context.Cause(held), ErrReleased)
}

func TestReentrantRenewalSurvivesForNextOwner(t *testing.T) { // RL-28, Redisson #6144
	f := newFixture(t, Options{WatchdogTimeout: 300 * time.Millisecond})
	l := f.l
	a, b := f.owners()
	require.NoError(t, l.Lock(a))
	require.NoError(t, l.Lock(a))
	require.NoError(t, l.Unlock(a))
	require.NoError(t, l.Unlock(a))
	assert.Equal(t, 0, f.c.holds.count())
	require.NoError(t, l.Lock(b))
	held := mustHeld(t, l, b)
	holdFor(t, l, b, held, 3*time.Second) // 10 watchdog timeouts
	assert.Positive(t, redistest.PTTL(t, f.rc, f.name))
	require.NoError(t, l.Unlock(b))
}

func TestClosedClientStopsRenewal(t *testing.T) { // RL-12
	f := newFixture(t, Options{WatchdogTimeout: 600 * time.Millisecond})
	other := f.otherLock(t)
	a, b := f.owners()
	require.NoError(t, f.l.Lock(a))
	f.c.Close()
	closed := time.Now()
	require.NoError(t, other.Lock(b))
	assert.Less(t, time.Since(closed), 600*time.Millisecond+500*time.Millisecond,
		"the lock is free within the watchdog timeout of the shutdown")
}

func TestForceUnlockElsewhereIsSignalled(t *testing.T) {
	f := newFixture(t, Options{WatchdogTimeout: 900 * time.Millisecond})
	l, ctx := f.l, f.ctx
	require.NoError(t, l.Lock(ctx))
	held := mustHeld(t, l, ctx)
	ok, err := f.otherLock(t).ForceUnlock(ctx)
	require.NoError(t, err)
	require.True(t, ok)
	forced := time.Now()
	select {
	case <-held.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("force-unlock was never signalled")
	}
	assert.Less(t, time.Since(forced), 300*time.Millisecond+500*time.Millisecond, "within one renewal interval")
	assert.ErrorIs(t, context.Cause(held), ErrLockLost)
	assert.ErrorIs(t, context.Cause(held), ErrRemoved)
	assert.ErrorIs(t, l.Unlock(ctx), ErrNotHeld)
	assert.Equal(t, 0, f.c.holds.count())
}

func TestRedisRestartLosesLock(t *testing.T) { // RL-27, F2
	f := newFixtureOn(t, redistest.Start(t), Options{WatchdogTimeout: time.Second})
	srv, l, ctx := f.srv, f.l, f.ctx
	require.NoError(t, l.Lock(ctx))
	held := mustHeld(t, l, ctx)
	srv.Kill(t)
	srv.Restart(t)
	select {
	case <-held.Done():
	case <-time.After(20 * time.Second):
		t.Fatal("the loss was never signalled")
	}
	assert.ErrorIs(t, context.Cause(held), ErrLockLost)
	assert.ErrorIs(t, l.Unlock(ctx), ErrNotHeld)

	// The first command on a connection broken by the restart may fail; Lock does not retry
	// an acquire whose outcome it cannot know, so the caller does.
	require.Eventually(t, func() bool { return l.Lock(ctx) == nil }, 10*time.Second, 50*time.Millisecond,
		"a new acquisition succeeds and arms renewal afresh")
	held2 := mustHeld(t, l, ctx)
	holdFor(t, l, ctx, held2, 2*time.Second)
	require.NoError(t, l.Unlock(ctx))
}

func TestLeaseExpiryIsSignalled(t *testing.T) {
	f := newFixture(t, Options{})
	l, ctx := f.l, f.ctx
	require.NoError(t, l.LockFor(ctx, 300*time.Millisecond))
	held := mustHeld(t, l, ctx)
	<-held.Done() // at the lease's end as this process measures it, which may precede the server's
	assert.ErrorIs(t, context.Cause(held), ErrLockLost)
	require.Eventually(t, func() bool {
		_, _, err := l.Held(ctx)
		return errors.Is(err, ErrNotHeld)
	}, 5*time.Second, 5*time.Millisecond)
}

func TestCancelledAcquireLeavesNothing(t *testing.T) { // RL-03, Redisson #7272 / #2714
	f := newFixture(t, Options{WatchdogTimeout: 500 * time.Millisecond})
	l := f.l
	cancelled := 0
	for range 2000 {
		ctx, cancel := context.WithCancel(NewOwner(context.Background()))
		go func() {
			time.Sleep(time.Duration(rand.IntN(150)) * time.Microsecond)
			cancel()
		}()
		if err := l.Lock(ctx); err == nil {
			require.NoError(t, l.Unlock(ctx))
		} else {
			require.ErrorIs(t, err, context.Canceled)
			cancelled++
		}
		cancel()
	}
	t.Logf("%d of 2000 acquisitions cancelled", cancelled)
	require.Eventually(t, func() bool {
		return f.c.holds.count() == 0 && redistest.PTTL(t, f.rc, f.name) == -2
	}, 5*time.Second, 10*time.Millisecond, "no hold is left taken or renewed")
}
