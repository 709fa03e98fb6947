package rlock

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The context of releases and of acquires whose caller may give up: the parent's values,
// not its cancellation, and its own deadline, with or without a Done channel asked for.
func TestDetachedContext(t *testing.T) {
	type key struct{}
	parent, cancel := context.WithCancel(context.WithValue(context.Background(), key{}, "v"))
	cancel()

	t.Run("Done asked for before the deadline", func(t *testing.T) {
		ctx := detach(parent, 50*time.Millisecond)
		defer ctx.stop()
		assert.Equal(t, "v", ctx.Value(key{}), "the parent's values")
		require.NoError(t, ctx.Err(), "not the parent's cancellation")
		dl, ok := ctx.Deadline()
		require.True(t, ok)
		assert.WithinDuration(t, time.Now().Add(50*time.Millisecond), dl, 50*time.Millisecond)
		select {
		case <-ctx.Done():
		case <-time.After(10 * time.Second):
			t.Fatal("Done not closed at the deadline")
		}
		assert.False(t, time.Now().Before(dl), "not before the deadline")
		assert.ErrorIs(t, ctx.Err(), context.DeadlineExceeded)
		assert.ErrorIs(t, context.Cause(ctx), context.DeadlineExceeded)
	})

	t.Run("Done asked for after the deadline", func(t *testing.T) {
		ctx := detach(parent, time.Millisecond)
		defer ctx.stop()
		require.Eventually(t, func() bool { return ctx.Err() != nil }, 10*time.Second, time.Millisecond)
		assert.ErrorIs(t, ctx.Err(), context.DeadlineExceeded)
		select {
		case <-ctx.Done():
		default:
			t.Fatal("Done of an expired context is not closed")
		}
	})

	t.Run("stopped before the deadline", func(t *testing.T) {
		ctx := detach(parent, time.Hour)
		done := ctx.Done()
		ctx.stop()
		require.NoError(t, ctx.Err())
		select {
		case <-done:
			t.Fatal("closed before its deadline")
		default:
		}
	})

	t.Run("a child context follows it", func(t *testing.T) {
		ctx := detach(parent, 20*time.Millisecond)
		defer ctx.stop()
		child, cancel := context.WithCancel(ctx)
		defer cancel()
		select {
		case <-child.Done():
		case <-time.After(10 * time.Second):
			t.Fatal("the child did not end with its parent's deadline")
		}
		assert.ErrorIs(t, child.Err(), context.DeadlineExceeded)
	})
}

// An acquire's context outlasts its caller's deadline by the grace, and ends the grace from
// now for a caller without a deadline.
func TestDetachAfter(t *testing.T) {
	caller, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	ctx := detachAfter(caller, time.Second)
	defer ctx.stop()
	want, _ := caller.Deadline()
	dl, ok := ctx.Deadline()
	require.True(t, ok)
	assert.Equal(t, want.Add(time.Second), dl, "the caller's deadline plus the grace")
	require.NoError(t, ctx.Err())

	ctx = detachAfter(context.WithoutCancel(caller), time.Second)
	defer ctx.stop()
	dl, ok = ctx.Deadline()
	require.True(t, ok)
	assert.WithinDuration(t, time.Now().Add(time.Second), dl, 500*time.Millisecond, "the grace from now")
}
