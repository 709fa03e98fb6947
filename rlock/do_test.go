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
	f := newFixture(t, Options{})
	l := f.l
	var inside context.Context
	err := l.Do(f.base, func(ctx context.Context) error { // f.base carries no owner
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
	assert.Equal(t, int64(-2), redistest.PTTL(t, f.rc, f.name), "released")
	assert.Equal(t, 0, f.c.holds.count())
}

func TestDoUsesCallersOwner(t *testing.T) {
	f := newFixture(t, Options{})
	l, ctx := f.l, f.ctx
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
	t.Run("fn's error", func(t *testing.T) {
		f := newFixture(t, Options{})
		boom := errors.New("boom")
		err := f.l.Do(f.base, func(context.Context) error { return boom })
		assert.ErrorIs(t, err, boom)
		assert.NotErrorIs(t, err, ErrNotHeld, "the release succeeded")
	})

	t.Run("hold lost while fn runs", func(t *testing.T) {
		// fn sees its context end, and the release error says so.
		f := newFixture(t, Options{})
		err := f.l.Do(f.base, func(ctx context.Context) error {
			if _, err := f.l.ForceUnlock(ctx); err != nil {
				return err
			}
			<-ctx.Done()
			return context.Cause(ctx)
		})
		assert.ErrorIs(t, err, ErrForceUnlocked)
		assert.ErrorIs(t, err, ErrNotHeld)
	})
}

func TestDoReleasesOnPanic(t *testing.T) {
	f := newFixture(t, Options{})
	assert.PanicsWithValue(t, "boom", func() {
		_ = f.l.Do(f.base, func(context.Context) error { panic("boom") })
	})
	assert.Equal(t, int64(-2), redistest.PTTL(t, f.rc, f.name), "released although fn panicked")
}

func TestTryDo(t *testing.T) {
	f := newFixture(t, Options{})
	l, other, rc, ctx := f.l, f.otherLock(t), f.rc, f.base
	holder := NewOwner(ctx)
	require.NoError(t, other.Lock(holder))
	ran := false
	err := l.TryDo(ctx, 50*time.Millisecond, func(context.Context) error { ran = true; return nil })
	assert.ErrorIs(t, err, ErrLocked)
	assert.False(t, ran, "fn does not run without the lock")
	assert.ErrorIs(t, l.TryDo(ctx, -1, func(context.Context) error { return nil }), ErrInvalidWait)

	done := make(chan error, 1)
	tries := redistest.Calls(t, rc, "pttl")
	go func() { done <- l.TryDo(ctx, 5*time.Second, func(context.Context) error { ran = true; return nil }) }()
	// Asleep once it has tried, subscribed and tried again.
	require.Eventually(t, func() bool { return redistest.Calls(t, rc, "pttl") >= tries+2 }, 5*time.Second, time.Millisecond)
	require.NoError(t, other.Unlock(holder))
	require.NoError(t, <-done)
	assert.True(t, ran)
}

// Do under contention: mutual exclusion, checked by the overlap detector.
func TestDoMutualExclusion(t *testing.T) {
	srv := redistest.Shared(t)
	name := redistest.Name(t)
	var ov redistest.Overlap
	var wg sync.WaitGroup
	for range 4 {
		c, _ := newClient(t, srv, Options{})
		l := c.NewLock(name)
		for range 4 {
			wg.Go(func() {
				for range 25 {
					err := l.Do(redistest.Context(t, 30*time.Second), func(context.Context) error {
						_, leave := ov.Enter()
						defer leave()
						return nil
					})
					assert.NoError(t, err)
				}
			})
		}
	}
	wg.Wait()
	assert.Zero(t, ov.Violations())
	assert.Equal(t, int64(400), ov.Entries())
}
