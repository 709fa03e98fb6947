package pubsub_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/goredisson/goredisson/internal/redistest"
	"github.com/goredisson/goredisson/rlock"
)

// TestRLockClientsOnOneRueidisClient: two rlock Clients on one rueidis client. Client A's
// waiters give up on a lock 50 times while client B's waiter waits on it; the holder's
// release then reaches B's waiter at once, long before the holder's 30 s watchdog lease.
func TestRLockClientsOnOneRueidisClient(t *testing.T) {
	srv := redistest.Shared(t)
	rc := srv.Client(t)
	ctx := redistest.Context(t, 30*time.Second)
	newClient := func() *rlock.Client {
		c, err := rlock.New(ctx, rc, rlock.Options{})
		require.NoError(t, err)
		t.Cleanup(c.Close)
		return c
	}
	a, b := newClient(), newClient()
	const name = "pubsub-test:two-clients"
	holder := rlock.NewOwner(ctx)
	require.NoError(t, a.NewLock(name).Lock(holder))

	waiter := rlock.NewOwner(ctx)
	got := make(chan time.Time, 1)
	go func() {
		assert.NoError(t, b.NewLock(name).Lock(waiter))
		got <- time.Now()
	}()
	ch := "redisson_lock__channel:{" + name + "}"
	numsub := func() int64 { return redistest.NumSub(t, rc, ch) }
	require.Eventually(t, func() bool { return numsub() == 1 }, 5*time.Second, time.Millisecond, "B's waiter never subscribed")

	la := a.NewLock(name)
	for i := range 50 {
		wait := time.Duration(i%3+1) * time.Millisecond
		if i%2 == 0 {
			assert.ErrorIs(t, la.TryLock(rlock.NewOwner(ctx), wait, 0), rlock.ErrLocked, "round %d", i)
		} else {
			cctx, ccancel := context.WithTimeout(rlock.NewOwner(ctx), wait)
			err := la.Lock(cctx)
			ccancel()
			assert.True(t, errors.Is(err, context.DeadlineExceeded), "round %d: %v", i, err)
		}
		require.Equal(t, int64(1), numsub(), "round %d: A's waiter leaving ended B's subscription", i)
	}
	released := time.Now()
	require.NoError(t, a.NewLock(name).Unlock(holder))
	select {
	case at := <-got:
		latency := at.Sub(released)
		t.Logf("B's waiter got the lock %v after the release", latency)
		assert.Less(t, latency, time.Second, "B's waiter was not woken by the release")
	case <-ctx.Done():
		t.Fatal("B's waiter never got the lock")
	}
	require.NoError(t, b.NewLock(name).Unlock(waiter))
}
