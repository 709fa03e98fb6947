package rlock

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/goredisson/goredisson/internal/redistest"
)

// An owner that holds a non-reentrant lock and acquires it again gets ErrReentry at once,
// from every acquire, without waiting and without changing its hold; other owners wait for
// it as usual, and one Unlock releases it.
func TestNonReentrantSameOwner(t *testing.T) {
	c, rc := newClient(t, redistest.Shared(t), Options{})
	name := redistest.Name(t)
	l := c.NewNonReentrantLock(name)
	ctx := NewOwner(redistest.Context(t, 10*time.Second))
	field := c.field(mustOwner(t, ctx))
	require.NoError(t, l.LockFor(ctx, 20*time.Second))
	assert.Equal(t, map[string]string{field: "1"}, redistest.HGetAll(t, rc, name))

	begin := time.Now()
	err := l.Lock(ctx)
	require.ErrorIs(t, err, ErrReentry)
	assert.EqualError(t, err, `rlock: Lock "`+name+`": non-reentrant lock already held by this owner`)
	assert.ErrorIs(t, l.TryLock(ctx, 5*time.Second, 0), ErrReentry)
	assert.ErrorIs(t, l.LockFor(ctx, time.Second), ErrReentry)
	assert.ErrorIs(t, l.TryLock(ctx, 0, 0), ErrReentry)
	ran := false
	assert.ErrorIs(t, l.Do(ctx, func(context.Context) error { ran = true; return nil }), ErrReentry)
	assert.False(t, ran, "Do does not run fn")
	assert.Less(t, time.Since(begin), time.Second, "none of them waited")
	assert.Equal(t, map[string]string{field: "1"}, redistest.HGetAll(t, rc, name), "the hold is unchanged")
	assert.InDelta(t, 20000, redistest.PTTL(t, rc, name), 1000, "and so is its lease (LockFor did not set 1 s)")
	_, _, err = l.Held(ctx)
	require.NoError(t, err, "the hold is still recorded")

	other := NewOwner(ctx)
	assert.ErrorIs(t, l.TryLock(other, 0, 0), ErrLocked, "another owner finds it locked, not re-entered")
	got := make(chan error, 1)
	go func() { got <- l.Lock(other) }()
	require.NoError(t, l.Unlock(ctx), "one Unlock releases it")
	select {
	case err := <-got:
		require.NoError(t, err, "the waiter is woken by the release")
	case <-time.After(5 * time.Second):
		t.Fatal("the waiter was not woken")
	}
	assert.ErrorIs(t, l.Unlock(ctx), ErrNotHeld)
	require.NoError(t, l.Unlock(other))
	assert.Empty(t, redistest.HGetAll(t, rc, name))
}

func TestNonReentrantMutualExclusion(t *testing.T) {
	name := redistest.Name(t)
	ov := contend(t, redistest.Shared(t), 3, 3, 20, func(c *Client) func(context.Context, func()) error {
		l := c.NewNonReentrantLock(name)
		return func(ctx context.Context, inside func()) error {
			return l.Do(ctx, func(context.Context) error { inside(); return nil })
		}
	})
	assert.Zero(t, ov.Violations())
	assert.Equal(t, int64(180), ov.Entries())
}

func TestNonReentrantBadInput(t *testing.T) {
	c, _ := newClient(t, redistest.Shared(t), Options{})
	owned := NewOwner(redistest.Context(t, 10*time.Second))
	assert.ErrorIs(t, c.NewNonReentrantLock("").Lock(owned), ErrEmptyName)
	l := c.NewNonReentrantLock(redistest.Name(t))
	assert.ErrorIs(t, l.TryLock(owned, -time.Second, 0), ErrInvalidWait)
	assert.ErrorIs(t, l.LockFor(owned, 0), ErrInvalidLease)
	assert.ErrorIs(t, l.Lock(context.Background()), ErrNoOwner)
	c.Close()
	assert.ErrorIs(t, l.Lock(owned), ErrClosed)
}
