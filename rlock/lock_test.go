package rlock

import (
	"context"
	"errors"
	"math"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/goredisson/goredisson/internal/redistest"
)

// TestLayoutMatchesRedisson checks the hash a Go holder writes: one field
// "<client-uuid>:<owner>" with the reentry count, PEXPIRE = the watchdog timeout.
func TestLayoutMatchesRedisson(t *testing.T) {
	f := newFixture(t, Options{})
	o := mustOwner(t, f.ctx)

	require.NoError(t, f.l.Lock(f.ctx))
	require.NoError(t, f.l.Lock(f.ctx))
	assert.Equal(t, map[string]string{f.c.ID() + ":" + o.String(): "2"}, redistest.HGetAll(t, f.rc, f.name))
	assert.Regexp(t, `^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`, f.c.ID())
	assert.InDelta(t, 30000, redistest.PTTL(t, f.rc, f.name), 1000)
	require.NoError(t, f.l.Unlock(f.ctx))
	require.NoError(t, f.l.Unlock(f.ctx))
	assert.Empty(t, redistest.HGetAll(t, f.rc, f.name))
}

func TestHoldCount(t *testing.T) { // RL-13
	f := newFixture(t, Options{})
	count := func() int {
		n, err := f.l.HoldCount(f.ctx)
		require.NoError(t, err)
		return n
	}
	assert.Equal(t, 0, count())
	require.NoError(t, f.l.Lock(f.ctx))
	assert.Equal(t, 1, count())
	require.NoError(t, f.l.Unlock(f.ctx))
	assert.Equal(t, 0, count())
	require.NoError(t, f.l.Lock(f.ctx))
	require.NoError(t, f.l.Lock(f.ctx))
	assert.Equal(t, 2, count())
	require.NoError(t, f.l.Unlock(f.ctx))
	assert.Equal(t, 1, count())
	require.NoError(t, f.l.Unlock(f.ctx))
	assert.Equal(t, 0, count())
}

func TestIsHeldAndIsLocked(t *testing.T) { // RL-14, RL-15, RL-16, RL-18
	f := newFixture(t, Options{})
	a, b := f.owners()
	state := func(ctx context.Context) (held, locked bool) {
		held, err := f.l.IsHeld(ctx)
		require.NoError(t, err)
		locked, err = f.l.IsLocked(ctx)
		require.NoError(t, err)
		return held, locked
	}
	held, locked := state(a)
	assert.False(t, held)
	assert.False(t, locked)
	require.NoError(t, f.l.Lock(a))
	held, locked = state(a)
	assert.True(t, held)
	assert.True(t, locked)
	held, locked = state(b)
	assert.False(t, held, "another owner does not hold it")
	assert.True(t, locked, "another owner sees it locked")
	require.NoError(t, f.l.Unlock(a))
	held, locked = state(a)
	assert.False(t, held)
	assert.False(t, locked)
	held, locked = state(b)
	assert.False(t, held)
	assert.False(t, locked)
}

func TestLockUnlockTwice(t *testing.T) { // RL-20
	f := newFixture(t, Options{})
	for range 2 {
		require.NoError(t, f.l.Lock(f.ctx))
		require.NoError(t, f.l.Unlock(f.ctx))
	}
	assert.Equal(t, int64(-2), redistest.PTTL(t, f.rc, f.name))
}

func TestReentrancyKeepsOthersOut(t *testing.T) { // RL-21
	f := newFixture(t, Options{})
	a, b := f.owners()
	require.NoError(t, f.l.TryLock(a, 0, 0))
	require.NoError(t, f.l.TryLock(a, 0, 0))
	require.NoError(t, f.l.Unlock(a))
	assert.ErrorIs(t, f.l.TryLock(b, 0, 0), ErrLocked, "hold count is still 1")
	require.NoError(t, f.l.Unlock(a))
	require.NoError(t, f.l.TryLock(b, 0, 0))
	require.NoError(t, f.l.Unlock(b))
}

func TestUnlockByNonHolder(t *testing.T) { // RL-19
	f := newFixture(t, Options{})
	a, b := f.owners()
	assert.ErrorIs(t, f.l.Unlock(a), ErrNotHeld, "never held")
	require.NoError(t, f.l.LockFor(a, time.Second))
	assert.ErrorIs(t, f.l.Unlock(b), ErrNotHeld, "held by another owner")
	held, err := f.l.IsHeld(a)
	require.NoError(t, err)
	assert.True(t, held, "a failed unlock leaves the holder's lock alone")
	require.NoError(t, f.l.Unlock(a))
}

func TestForceUnlock(t *testing.T) { // RL-08
	f := newFixture(t, Options{})
	require.NoError(t, f.l.Lock(f.ctx))
	ok, err := f.l.ForceUnlock(f.ctx)
	require.NoError(t, err)
	assert.True(t, ok)
	locked, err := f.l.IsLocked(f.ctx)
	require.NoError(t, err)
	assert.False(t, locked)
	assert.Equal(t, 0, f.c.holds.count(), "force-unlock stops local renewal")
	locked, err = f.c.NewLock(f.name).IsLocked(f.ctx)
	require.NoError(t, err)
	assert.False(t, locked, "a fresh handle sees it unlocked")
	ok, err = f.l.ForceUnlock(f.ctx)
	require.NoError(t, err)
	assert.False(t, ok, "nothing to delete")
}

func TestExpiredLeaseIsTakenAndUnlockFails(t *testing.T) { // RL-09
	f := newFixture(t, Options{})
	a, b := f.owners()
	start := time.Now()
	require.NoError(t, f.l.LockFor(a, 2*time.Second))
	require.NoError(t, f.l.Lock(b), "the waiter gets the lock when the lease runs out, with no publish")
	took := time.Since(start)
	assert.GreaterOrEqual(t, took, 1900*time.Millisecond)
	assert.Less(t, took, 2500*time.Millisecond)
	assert.ErrorIs(t, f.l.Unlock(a), ErrNotHeld, "unlocking an expired lock is an error")
	require.NoError(t, f.l.Unlock(b))
}

func TestRemainTTL(t *testing.T) { // RL-10
	f := newFixture(t, Options{})
	ttl := func() time.Duration {
		d, err := f.l.RemainTTL(f.ctx)
		require.NoError(t, err)
		return d
	}
	require.NoError(t, f.l.LockFor(f.ctx, time.Hour))
	assert.InDelta(t, float64(time.Hour), float64(ttl()), float64(100*time.Millisecond))
	require.NoError(t, f.l.Unlock(f.ctx))
	_, err := f.l.RemainTTL(f.ctx)
	assert.ErrorIs(t, err, ErrNotLocked, "no lock is not 0 ms left")
	require.NoError(t, f.l.Lock(f.ctx))
	assert.InDelta(t, float64(30*time.Second), float64(ttl()), float64(100*time.Millisecond),
		"an earlier explicit lease does not leak into a watchdog acquisition")
	require.NoError(t, f.l.Unlock(f.ctx))
}

func TestReentrantUnlockKeepsLease(t *testing.T) { // RL-05
	f := newFixture(t, Options{})
	for range 3 {
		require.NoError(t, f.l.LockFor(f.ctx, 10*time.Second))
	}
	require.NoError(t, f.l.Unlock(f.ctx))
	require.NoError(t, f.l.Unlock(f.ctx))
	d, err := f.l.RemainTTL(f.ctx)
	require.NoError(t, err)
	assert.GreaterOrEqual(t, d, 9*time.Second)
	assert.LessOrEqual(t, d, 10*time.Second)
	require.NoError(t, f.l.Unlock(f.ctx))
}

func TestTryLockWaitElapses(t *testing.T) { // RL-06 shape, with a short wait
	f := newFixture(t, Options{})
	a, b := f.owners()
	require.NoError(t, f.l.Lock(a))
	start := time.Now()
	assert.ErrorIs(t, f.l.TryLock(b, 300*time.Millisecond, 0), ErrLocked)
	took := time.Since(start)
	assert.GreaterOrEqual(t, took, 290*time.Millisecond)
	assert.Less(t, took, time.Second)
	require.NoError(t, f.l.Unlock(a))
}

func TestBadInput(t *testing.T) {
	t.Run("options", func(t *testing.T) {
		rc := redistest.Shared(t).Client(t)
		ctx := redistest.Context(t, testTimeout)
		_, err := New(ctx, nil, Options{})
		assert.ErrorIs(t, err, ErrNilClient)
		for _, opts := range []Options{
			{WatchdogTimeout: -time.Second},
			{RenewBatchSize: -1},
			{PubSub: PubSubMode(9)},
		} {
			_, err = New(ctx, rc, opts)
			assert.ErrorIs(t, err, ErrInvalidOptions, "%+v", opts)
		}
	})

	t.Run("name, wait and lease", func(t *testing.T) {
		f := newFixture(t, Options{})
		assert.ErrorIs(t, f.c.NewLock("").Lock(f.ctx), ErrEmptyName)
		assert.ErrorIs(t, f.l.TryLock(f.ctx, -time.Second, 0), ErrInvalidWait)
		assert.ErrorIs(t, f.l.TryLock(f.ctx, 0, -time.Second), ErrInvalidLease)
		assert.ErrorIs(t, f.l.LockFor(f.ctx, 0), ErrInvalidLease)
		assert.ErrorIs(t, f.l.LockFor(f.ctx, -time.Second), ErrInvalidLease)
	})

	t.Run("no owner in ctx", func(t *testing.T) {
		f := newFixture(t, Options{})
		assert.ErrorIs(t, f.l.Lock(f.base), ErrNoOwner)
		assert.ErrorIs(t, f.l.Unlock(f.base), ErrNoOwner)
		_, err := f.l.HoldCount(f.base)
		assert.ErrorIs(t, err, ErrNoOwner)
		_, err = f.l.IsHeld(f.base)
		assert.ErrorIs(t, err, ErrNoOwner)
		_, _, err = f.l.Held(f.base)
		assert.ErrorIs(t, err, ErrNoOwner)
	})

	t.Run("cancelled ctx acquires nothing", func(t *testing.T) {
		f := newFixture(t, Options{})
		cancelled, cancel := context.WithCancel(f.ctx)
		cancel()
		assert.ErrorIs(t, f.l.Lock(cancelled), context.Canceled)
		locked, err := f.l.IsLocked(f.ctx)
		require.NoError(t, err)
		assert.False(t, locked)
	})

	t.Run("closed client", func(t *testing.T) {
		f := newFixture(t, Options{})
		require.NoError(t, f.l.Lock(f.ctx))
		f.c.Close()
		assert.ErrorIs(t, f.l.Lock(f.ctx), ErrClosed)
		assert.ErrorIs(t, f.l.Unlock(f.ctx), ErrClosed)
		_, err := f.l.IsLocked(f.ctx)
		assert.ErrorIs(t, err, ErrClosed)
		_, err = f.l.ForceUnlock(f.ctx)
		assert.ErrorIs(t, err, ErrClosed)
		assert.ErrorIs(t, f.c.NewLock("x").Lock(f.ctx), ErrClosed)
		f.c.Close() // idempotent
	})
}

func TestUnlockWithCancelledContext(t *testing.T) {
	f := newFixture(t, Options{})
	ctx, cancel := context.WithCancel(f.ctx)
	require.NoError(t, f.l.Lock(ctx))
	cancel()
	require.NoError(t, f.l.Unlock(ctx), "unlock runs even when the caller's ctx has ended")
	assert.Empty(t, redistest.HGetAll(t, f.rc, f.name))
	assert.Equal(t, 0, f.c.holds.count())
}

func TestOwnerHandOff(t *testing.T) {
	f := newFixture(t, Options{})
	require.NoError(t, f.l.Lock(f.ctx))
	o := mustOwner(t, f.ctx)
	done := make(chan error, 1)
	go func() { // another goroutine continues as the same owner
		done <- f.l.Unlock(WithOwner(context.Background(), o))
	}()
	require.NoError(t, <-done)
	held, err := f.l.IsHeld(f.ctx)
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
	f := newFixture(t, Options{})
	for range 20 {
		require.NoError(t, f.l.Lock(f.ctx))
		require.NoError(t, f.l.Unlock(f.ctx))
	}
	latches := func() []string {
		ks, err := f.rc.Do(f.ctx, f.rc.B().Keys().Pattern("redisson_unlock_latch:{"+f.name+"}:*").Build()).AsStrSlice()
		require.NoError(t, err)
		return ks
	}
	require.Eventually(t, func() bool { return len(latches()) == 0 }, 2*time.Second, 10*time.Millisecond,
		"latches are deleted in the background, long before their 20 s TTL")
}

// A lease near the largest Duration, extended by a write lock's re-entry past it, is read
// back by RemainTTL as the largest Duration, not as an overflowed negative one.
func TestRemainTTLHugeLease(t *testing.T) {
	f := newFixture(t, Options{})
	w := f.c.NewReadWriteLock(f.name).WriteLock()
	require.NoError(t, w.TryLock(f.ctx, 0, math.MaxInt64))
	require.NoError(t, w.TryLock(f.ctx, 0, math.MaxInt64), "re-entry adds its lease to the TTL")
	d, err := w.RemainTTL(f.base)
	require.NoError(t, err)
	assert.Equal(t, time.Duration(math.MaxInt64), d)
	require.NoError(t, w.Unlock(f.ctx))
	require.NoError(t, w.Unlock(f.ctx))
}

// The same owner's Unlock and Lock at once, from two goroutines: whichever script runs first,
// the owner holds the lock once afterwards, the table of holds still has the hold, and the
// watchdog renews it. (An Unlock whose release ran before the Lock's acquire once ended the
// hold that acquire had re-created, and the lock expired under its owner.)
func TestSameOwnerUnlockLockRace(t *testing.T) {
	f := newFixture(t, Options{})
	field := f.c.field(mustOwner(t, f.ctx))
	for i := range 200 {
		require.NoError(t, f.l.Lock(f.ctx))
		var wg sync.WaitGroup
		var uerr, lerr error
		wg.Add(2)
		go func() { defer wg.Done(); uerr = f.l.Unlock(f.ctx) }()
		go func() { defer wg.Done(); lerr = f.l.Lock(f.ctx) }()
		wg.Wait()
		require.NoError(t, uerr, "round %d", i)
		require.NoError(t, lerr, "round %d", i)
		n, err := f.l.HoldCount(f.ctx)
		require.NoError(t, err)
		require.Equal(t, 1, n, "round %d: held once", i)
		require.True(t, f.c.holds.has(f.name, field), "round %d: the table keeps the hold", i)
		require.True(t, renewing(f.c, f.name, field), "round %d: the watchdog renews it", i)
		require.NoError(t, f.l.Unlock(f.ctx))
	}
}
