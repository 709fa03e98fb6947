package rlock

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/goredisson/goredisson/internal/redistest"
)

func tokenOf(t testing.TB, rc rueidis.Client, name string) string {
	t.Helper()
	v, err := rc.Do(context.Background(), rc.B().Get().Key("redisson_lock_token:{"+name+"}").Build()).ToString()
	require.NoError(t, err)
	return v
}

// The fenced lock writes Redisson's layout: the lock hash, and the token counter
// "redisson_lock_token:{name}" (the name unchanged inside when it has its own hash tag),
// incremented by every acquisition, re-entries included; Token reads it.
func TestFencedLayoutAndTokens(t *testing.T) {
	c, rc := newClient(t, redistest.Shared(t), Options{})
	name := redistest.Name(t)
	f := c.NewFencedLock(name)
	ctx := NewOwner(redistest.Context(t, 10*time.Second))
	field := c.field(mustOwner(t, ctx))

	tok, err := f.Token(ctx)
	require.NoError(t, err)
	assert.Zero(t, tok, "no token issued yet")

	t1, err := f.Lock(ctx)
	require.NoError(t, err)
	assert.Equal(t, int64(1), t1)
	assert.Equal(t, map[string]string{field: "1"}, redistest.HGetAll(t, rc, name))
	assert.InDelta(t, DefaultWatchdogTimeout.Milliseconds(), redistest.PTTL(t, rc, name), 1000)
	assert.Equal(t, "1", tokenOf(t, rc, name))

	t2, err := f.LockFor(ctx, 5*time.Second)
	require.NoError(t, err)
	assert.Equal(t, int64(2), t2, "a re-entry is issued a new token")
	t3, err := f.TryLock(ctx, 0, 0)
	require.NoError(t, err)
	assert.Equal(t, int64(3), t3)
	assert.Equal(t, map[string]string{field: "3"}, redistest.HGetAll(t, rc, name))
	n, err := f.HoldCount(ctx)
	require.NoError(t, err)
	assert.Equal(t, 3, n)

	_, _, held, err := f.Held(ctx)
	require.NoError(t, err)
	assert.Equal(t, t3, held, "Held gives the token of the latest acquisition")

	other := NewOwner(ctx)
	_, err = f.TryLock(other, 0, 0)
	assert.ErrorIs(t, err, ErrLocked)
	assert.EqualError(t, err, `rlock: TryLock "`+name+`": held by another owner`)
	tok, err = f.Token(ctx)
	require.NoError(t, err)
	assert.Equal(t, t3, tok, "a failed attempt is issued no token")

	for range 3 {
		require.NoError(t, f.Unlock(ctx))
	}
	assert.Empty(t, redistest.HGetAll(t, rc, name))
	assert.Equal(t, "3", tokenOf(t, rc, name), "the counter outlives the lock")
	assert.Equal(t, int64(-1), redistest.PTTL(t, rc, "redisson_lock_token:{"+name+"}"), "and has no TTL")

	t4, err := f.Lock(other)
	require.NoError(t, err)
	assert.Equal(t, int64(4), t4)
	ok, err := f.ForceUnlock(ctx)
	require.NoError(t, err)
	assert.True(t, ok)
	assert.ErrorIs(t, f.Unlock(other), ErrNotHeld)
	assert.Equal(t, "4", tokenOf(t, rc, name), "ForceUnlock keeps the counter")

	tagged := c.NewFencedLock("{" + name + "}:x")
	_, err = tagged.Lock(ctx)
	require.NoError(t, err)
	defer tagged.Unlock(ctx)
	v, err := rc.Do(ctx, rc.B().Get().Key("redisson_lock_token:{"+name+"}:x").Build()).ToString()
	require.NoError(t, err)
	assert.Equal(t, "1", v, "a hash-tagged name is used as it is")
}

// Mutual exclusion across clients, with tokens: every critical section sees a token larger
// than the one before it, which is what a fenced resource checks.
func TestFencedMutualExclusionTokensIncrease(t *testing.T) {
	name := redistest.Name(t)
	var mu sync.Mutex // for the race detector: the lock orders the sections, through Redis
	var last int64
	var decreases int
	ov := contend(t, redistest.Shared(t), 4, 3, 20, func(c *Client) func(context.Context, func()) error {
		f := c.NewFencedLock(name)
		return func(ctx context.Context, inside func()) error {
			return f.Do(ctx, func(ctx context.Context, token int64) error {
				inside()
				mu.Lock()
				defer mu.Unlock()
				if token <= last {
					decreases++
				}
				last = token
				return nil
			})
		}
	})
	assert.Zero(t, ov.Violations())
	assert.Zero(t, decreases, "every critical section had a larger token than the one before")
	assert.Equal(t, int64(240), ov.Entries())
	assert.Equal(t, int64(240), last)
}

// A holder whose lease ran out keeps its old token; the next holder's token is larger, so a
// resource that remembers the largest token it saw rejects the late holder.
func TestFencedTokenOfExpiredHolderIsStale(t *testing.T) {
	c, _ := newClient(t, redistest.Shared(t), Options{})
	f := c.NewFencedLock(redistest.Name(t))
	base := redistest.Context(t, 10*time.Second)
	late, next := NewOwner(base), NewOwner(base)
	old, err := f.LockFor(late, 100*time.Millisecond)
	require.NoError(t, err)
	hctx, stop, held, err := f.Held(late)
	require.NoError(t, err)
	defer stop()
	assert.Equal(t, old, held)
	newer, err := f.Lock(next)
	require.NoError(t, err, "the lease ran out")
	defer f.Unlock(next)
	assert.Greater(t, newer, old)
	select {
	case <-hctx.Done():
		assert.ErrorIs(t, context.Cause(hctx), ErrLeaseExpired)
	case <-time.After(5 * time.Second):
		t.Fatal("the late holder's Held context did not end")
	}
}

func TestFencedBadInput(t *testing.T) {
	c, _ := newClient(t, redistest.Shared(t), Options{})
	ctx := redistest.Context(t, 10*time.Second)
	owned := NewOwner(ctx)
	_, err := c.NewFencedLock("").Lock(owned)
	assert.ErrorIs(t, err, ErrEmptyName)
	_, err = c.NewFencedLock("").Token(owned)
	assert.ErrorIs(t, err, ErrEmptyName)
	f := c.NewFencedLock(redistest.Name(t))
	_, err = f.TryLock(owned, -time.Second, 0)
	assert.ErrorIs(t, err, ErrInvalidWait)
	_, err = f.TryLock(owned, 0, -time.Second)
	assert.ErrorIs(t, err, ErrInvalidLease)
	_, err = f.LockFor(owned, 0)
	assert.ErrorIs(t, err, ErrInvalidLease)
	assert.ErrorIs(t, f.TryDo(owned, -time.Second, func(context.Context, int64) error { return nil }), ErrInvalidWait)
	_, err = f.Lock(ctx)
	assert.ErrorIs(t, err, ErrNoOwner)
	_, _, _, err = f.Held(owned)
	assert.ErrorIs(t, err, ErrNotHeld)
	tok, err := f.Token(owned)
	require.NoError(t, err)
	assert.Zero(t, tok, "bad calls issued no token")

	c.Close()
	_, err = f.Lock(owned)
	assert.ErrorIs(t, err, ErrClosed)
	_, err = f.Token(owned)
	assert.ErrorIs(t, err, ErrClosed)
	assert.ErrorIs(t, f.Unlock(owned), ErrClosed)
}

// A token counter that someone set to a negative number (so INCR returns 0): the acquire
// holds the lock, as Java reads the reply (its first element -1), and reports the token;
// it is not left holding a hold it thinks it does not have.
func TestFencedNonPositiveTokenStillHolds(t *testing.T) {
	c, rc := newClient(t, redistest.Shared(t), Options{})
	name := redistest.Name(t)
	redistest.Do(t, rc, rc.B().Set().Key("redisson_lock_token:{"+name+"}").Value("-1").Build())
	f := c.NewFencedLock(name)
	ctx := NewOwner(redistest.Context(t, 10*time.Second))
	tok, err := f.TryLock(ctx, 0, 0)
	require.NoError(t, err)
	assert.Equal(t, int64(0), tok)
	held, err := f.IsHeld(ctx)
	require.NoError(t, err)
	assert.True(t, held)
	require.NoError(t, f.Unlock(ctx))
	assert.False(t, redistest.Exists(t, rc, name))
}
