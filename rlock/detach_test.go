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
		require.Eventually(t, func() bool { return ctx.Err() != nil }, 10*time.Second, time.Millisecond)
		assert.ErrorIs(t, ctx.Err(), context.DeadlineExceeded)
		select {
		case <-ctx.Done():
		default:
			t.Fatal("Done of an expired context is not closed")
		}
	})

	t.Run("deadlines in one grain share a channel, removed once closed", func(t *testing.T) {
		at := time.Now().Add(30 * time.Millisecond)
		a, b := detachAt(parent, at), detachAt(parent, at.Add(time.Nanosecond))
		require.Equal(t, a.deadline, b.deadline, "one grain")
		assert.Equal(t, a.Done(), b.Done(), "one channel")
		assert.Equal(t, a.Done(), a.Done(), "the same channel each call")
		<-a.Done()
		assert.ErrorIs(t, b.Err(), context.DeadlineExceeded)
		sharedDone.mu.Lock()
		_, left := sharedDone.m[a.deadline.UnixNano()]
		sharedDone.mu.Unlock()
		assert.False(t, left, "the closed channel is removed")
	})

	t.Run("a channel handed out lately is read without the table's lock", func(t *testing.T) {
		ctx := detach(parent, 30*time.Millisecond)
		done := ctx.Done()
		got := make(chan (<-chan struct{}), 1)
		sharedDone.mu.Lock()
		go func() { got <- sharedDone.channel(ctx.deadline) }()
		select {
		case ch := <-got:
			assert.Equal(t, done, ch, "the channel of that deadline")
		case <-time.After(10 * time.Second):
			t.Error("the lookup waited for the table's lock")
		}
		sharedDone.mu.Unlock()
		<-done
		assert.Equal(t, done, sharedDone.channel(ctx.deadline), "closed, and still the one of that deadline")
	})

	t.Run("a child context follows it", func(t *testing.T) {
		ctx := detach(parent, 20*time.Millisecond)
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
	want, _ := caller.Deadline()
	want = want.Add(time.Second)
	dl, ok := ctx.Deadline()
	require.True(t, ok)
	assert.False(t, dl.Before(want), "the caller's deadline plus the grace, rounded up")
	assert.Less(t, dl.Sub(want), time.Until(want)/25, "rounded up by less than 4% of the time left")
	require.NoError(t, ctx.Err())

	ctx = detachAfter(context.WithoutCancel(caller), time.Second)
	dl, ok = ctx.Deadline()
	require.True(t, ok)
	assert.WithinDuration(t, time.Now().Add(time.Second), dl, 500*time.Millisecond, "the grace from now")
}

// A deadline is rounded up to a grain of at least minGrain and under 4% of the time left.
func TestRoundUp(t *testing.T) {
	for _, left := range []time.Duration{0, time.Millisecond, time.Second, 5 * time.Second, time.Minute, time.Hour} {
		at := time.Now().Add(left)
		got := roundUp(at)
		assert.False(t, got.Before(at), "%v: not earlier", left)
		assert.Less(t, got.Sub(at), max(minGrain, left/25), "%v: within its grain", left)
	}
}

// A caller's deadline years away still gives a detached context that ends within a day.
func TestDetachFarDeadline(t *testing.T) {
	caller, cancel := context.WithDeadline(context.Background(), time.Now().AddDate(500, 0, 0))
	defer cancel()
	ctx := detachAfter(caller, time.Second)
	dl, _ := ctx.Deadline()
	assert.WithinDuration(t, time.Now().Add(maxDetached), dl, maxDetached/25)
	require.NoError(t, ctx.Err())
}

// A ctx with a deadline is known to end without asking for its Done channel, which a
// context may make only when asked (context.WithTimeout's does).
func TestMayEnd(t *testing.T) {
	assert.False(t, mayEnd(context.Background()))
	assert.False(t, mayEnd(context.WithValue(context.Background(), struct{}{}, 1)))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	assert.True(t, mayEnd(ctx))
	assert.True(t, mayEnd(noDone{deadline: time.Now().Add(time.Hour)}), "by its deadline")
}

// noDone is a context with a deadline that fails a test asking for its Done channel.
type noDone struct {
	context.Context
	deadline time.Time
}

func (c noDone) Deadline() (time.Time, bool) { return c.deadline, true }

func (c noDone) Done() <-chan struct{} { panic("Done asked for") }
