package rlock

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/goredisson/goredisson/internal/redistest"
)

func TestDoMintsOwnerAndReleases(t *testing.T) {
	c, rc := newClient(t, redistest.Shared(t), Options{})
	name := lockName(t)
	l := newLock(t, c, name)
	ctx := testCtx(t, 10*time.Second) // no owner
	var inside context.Context
	err := l.Do(ctx, func(ctx context.Context) error {
		inside = ctx
		_, ok := OwnerFrom(ctx)
		assert.True(t, ok, "fn gets an owner")
		held, err := l.IsHeld(ctx)
		assert.NoError(t, err)
		assert.True(t, held)
		require.NoError(t, l.Lock(ctx), "the owner re-enters")
		return l.Unlock(ctx)
	})
	require.NoError(t, err)
	assert.ErrorIs(t, context.Cause(inside), ErrReleased, "fn's ctx is the Held context")
	assert.Equal(t, int64(-2), pttl(t, rc, name), "released")
	assert.Equal(t, 0, c.holds.count())
}

func TestDoUsesCallersOwner(t *testing.T) {
	c, _ := newClient(t, redistest.Shared(t), Options{})
	l := newLock(t, c, lockName(t))
	ctx := NewOwner(testCtx(t, 10*time.Second))
	require.NoError(t, l.Lock(ctx))
	require.NoError(t, l.Do(ctx, func(ctx context.Context) error {
		n, err := l.HoldCount(ctx)
		assert.Equal(t, 2, n, "Do re-enters a hold of the caller's owner")
		return err
	}))
	n, err := l.HoldCount(ctx)
	require.NoError(t, err)
	assert.Equal(t, 1, n)
	require.NoError(t, l.Unlock(ctx))
}

func TestDoJoinsErrors(t *testing.T) {
	c, _ := newClient(t, redistest.Shared(t), Options{})
	l := newLock(t, c, lockName(t))
	ctx := testCtx(t, 10*time.Second)
	boom := errors.New("boom")
	err := l.Do(ctx, func(context.Context) error { return boom })
	assert.ErrorIs(t, err, boom)
	assert.NotErrorIs(t, err, ErrNotHeld, "the release succeeded")

	// The hold is lost while fn runs: fn sees its context end, and the release error says so.
	err = l.Do(ctx, func(ctx context.Context) error {
		if _, err := l.ForceUnlock(ctx); err != nil {
			return err
		}
		<-ctx.Done()
		return context.Cause(ctx)
	})
	assert.ErrorIs(t, err, ErrForceUnlocked)
	assert.ErrorIs(t, err, ErrNotHeld)
}

func TestDoReleasesOnPanic(t *testing.T) {
	c, rc := newClient(t, redistest.Shared(t), Options{})
	name := lockName(t)
	l := newLock(t, c, name)
	assert.PanicsWithValue(t, "boom", func() {
		_ = l.Do(testCtx(t, 10*time.Second), func(context.Context) error { panic("boom") })
	})
	assert.Equal(t, int64(-2), pttl(t, rc, name), "released although fn panicked")
}

func TestTryDo(t *testing.T) {
	srv := redistest.Shared(t)
	c, rc := newClient(t, srv, Options{})
	other, _ := newClient(t, srv, Options{})
	name := lockName(t)
	l := newLock(t, c, name)
	ctx := testCtx(t, 10*time.Second)
	holder := NewOwner(ctx)
	require.NoError(t, other.NewLock(name).Lock(holder))
	ran := false
	err := l.TryDo(ctx, 50*time.Millisecond, func(context.Context) error { ran = true; return nil })
	assert.ErrorIs(t, err, ErrLocked)
	assert.False(t, ran, "fn does not run without the lock")
	assert.ErrorIs(t, l.TryDo(ctx, -1, func(context.Context) error { return nil }), ErrInvalidWait)

	done := make(chan error, 1)
	tries := failedTries(t, rc)
	go func() { done <- l.TryDo(ctx, 5*time.Second, func(context.Context) error { ran = true; return nil }) }()
	// Asleep once it has tried, subscribed and tried again.
	require.Eventually(t, func() bool { return failedTries(t, rc) >= tries+2 }, 5*time.Second, time.Millisecond)
	require.NoError(t, other.NewLock(name).Unlock(holder))
	require.NoError(t, <-done)
	assert.True(t, ran)
}

// Do under contention: mutual exclusion, checked by the overlap detector.
func TestDoMutualExclusion(t *testing.T) {
	srv := redistest.Shared(t)
	name := lockName(t)
	var ov overlap
	var wg sync.WaitGroup
	for range 4 {
		c, _ := newClient(t, srv, Options{})
		l := newLock(t, c, name)
		for range 4 {
			wg.Go(func() {
				for range 25 {
					err := l.Do(testCtx(t, 30*time.Second), func(context.Context) error {
						defer ov.enter()()
						return nil
					})
					assert.NoError(t, err)
				}
			})
		}
	}
	wg.Wait()
	assert.Zero(t, ov.violations.Load())
	assert.Equal(t, int64(400), ov.entries.Load())
}
