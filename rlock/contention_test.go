package rlock

import (
	"context"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/goredisson/goredisson/internal/redistest"
)

func TestConcurrentTryLockUnlock(t *testing.T) { // RL-22 (PR #7070)
	c, rc := newClient(t, redistest.Shared(t), Options{})
	name := lockName(t)
	l := newLock(t, c, name)
	var ov overlap
	var unregistered atomic.Int32
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			ctx := NewOwner(context.Background())
			field, _ := l.ownerField(ctx)
			for range 300 {
				if l.TryLock(ctx, 0, 0) != nil {
					continue
				}
				out := ov.enter()
				if !renewing(c, name, field) {
					unregistered.Add(1)
				}
				out()
				assert.NoError(t, l.Unlock(ctx))
			}
		})
	}
	wg.Wait()
	assert.Zero(t, ov.violations.Load(), "two owners inside at once")
	assert.Zero(t, unregistered.Load(), "a held lock was missing from the renewal registry at unlock")
	assert.Positive(t, ov.entries.Load())
	assert.Equal(t, 0, c.holds.count())
	assert.Equal(t, int64(-2), pttl(t, rc, name))
}

// counterUnderLock increments a Redis counter non-atomically (GET, then SET) under the lock.
func counterUnderLock(t *testing.T, l *Lock, rc rueidis.Client, counter string, ov *overlap) {
	ctx := NewOwner(testCtx(t, time.Minute))
	require.NoError(t, l.Lock(ctx))
	out := ov.enter()
	v, err := rc.Do(ctx, rc.B().Get().Key(counter).Build()).AsInt64()
	if rueidis.IsRedisNil(err) {
		err = nil
	}
	require.NoError(t, err)
	require.NoError(t, rc.Do(ctx, rc.B().Set().Key(counter).Value(strconv.FormatInt(v+1, 10)).Build()).Error())
	out()
	require.NoError(t, l.Unlock(ctx))
}

func TestConcurrencySingleClient(t *testing.T) { // RL-23
	c, rc := newClient(t, redistest.Shared(t), Options{})
	name := lockName(t)
	l := newLock(t, c, name)
	var ov overlap
	var wg sync.WaitGroup
	for range 15 {
		wg.Go(func() { counterUnderLock(t, l, rc, name+":count", &ov) })
	}
	wg.Wait()
	assert.Zero(t, ov.violations.Load())
	n, err := rc.Do(context.Background(), rc.B().Get().Key(name+":count").Build()).AsInt64()
	require.NoError(t, err)
	assert.Equal(t, int64(15), n)
}

func TestConcurrencyManyClients(t *testing.T) { // RL-24 shape: clients × rounds
	srv := redistest.Shared(t)
	name := lockName(t)
	var ov overlap
	var wg sync.WaitGroup
	var rc rueidis.Client
	for range 4 {
		c, crc := newClient(t, srv, Options{})
		rc = crc
		l := newLock(t, c, name)
		for range 4 {
			wg.Go(func() {
				for range 25 {
					counterUnderLock(t, l, crc, name+":count", &ov)
				}
			})
		}
	}
	wg.Wait()
	assert.Zero(t, ov.violations.Load())
	n, err := rc.Do(context.Background(), rc.B().Get().Key(name+":count").Build()).AsInt64()
	require.NoError(t, err)
	assert.Equal(t, int64(400), n)
	assert.Equal(t, int64(-2), pttl(t, rc, name))
}

// TestWaiterWokenByRelease shows a waiter is woken by the unlock message, not by the
// holder's TTL (30 s with the watchdog).
func TestWaiterWokenByRelease(t *testing.T) {
	srv := redistest.Shared(t)
	a, rc := newClient(t, srv, Options{})
	b, _ := newClient(t, srv, Options{})
	name := lockName(t)
	la, lb := newLock(t, a, name), newLock(t, b, name)
	base := testCtx(t, 20*time.Second)
	holder, waiter := NewOwner(base), NewOwner(base)
	require.NoError(t, la.Lock(holder))
	got := make(chan time.Time, 1)
	go func() {
		assert.NoError(t, lb.Lock(waiter))
		got <- time.Now()
	}()
	waitSubscribed(t, rc, name, 1)
	released := time.Now()
	require.NoError(t, la.Unlock(holder))
	handoff := (<-got).Sub(released)
	t.Logf("handoff %v", handoff)
	assert.Less(t, handoff, 2*time.Second, "woken by the message, long before the 30 s TTL")
	require.NoError(t, lb.Unlock(waiter))
	require.Eventually(t, func() bool { return subscribers(t, rc, name) == 0 }, 5*time.Second, 5*time.Millisecond)
}

func TestWaitersServedInArrivalOrder(t *testing.T) {
	srv := redistest.Shared(t)
	c, rc := newClient(t, srv, Options{})
	name := lockName(t)
	l := newLock(t, c, name)
	base := testCtx(t, 20*time.Second)
	holder := NewOwner(base)
	require.NoError(t, l.Lock(holder))
	order := make(chan int, 3)
	var wg sync.WaitGroup
	defer wg.Wait()
	for i := range 3 {
		ctx := NewOwner(base)
		tries := failedTries(t, rc)
		wg.Go(func() {
			assert.NoError(t, l.Lock(ctx))
			order <- i
			assert.NoError(t, l.Unlock(ctx))
		})
		// Asleep once it has tried, subscribed and tried again.
		require.Eventually(t, func() bool { return failedTries(t, rc) >= tries+2 }, 5*time.Second, time.Millisecond)
	}
	waitSubscribed(t, rc, name, 1)
	require.NoError(t, l.Unlock(holder))
	for i := range 3 {
		assert.Equal(t, i, <-order)
	}
}

func TestCancelWhileWaitingLeavesNoSubscription(t *testing.T) {
	srv := redistest.Shared(t)
	c, rc := newClient(t, srv, Options{})
	name := lockName(t)
	l := newLock(t, c, name)
	base := testCtx(t, 20*time.Second)
	holder := NewOwner(base)
	require.NoError(t, l.Lock(holder))
	ctx, cancel := context.WithCancel(NewOwner(base))
	done := make(chan error, 1)
	go func() { done <- l.Lock(ctx) }()
	waitSubscribed(t, rc, name, 1)
	cancel()
	assert.ErrorIs(t, <-done, context.Canceled)
	require.Eventually(t, func() bool { return subscribers(t, rc, name) == 0 },
		5*time.Second, 5*time.Millisecond)
	require.NoError(t, l.Unlock(holder))
}

func TestLostMessageFallsBackToTTL(t *testing.T) {
	srv := redistest.Shared(t)
	c, rc := newClient(t, srv, Options{})
	name := lockName(t)
	l := newLock(t, c, name)
	ctx := NewOwner(testCtx(t, 20*time.Second))
	rawHolder(t, rc, name, "gone:1", 500) // a holder that vanishes without publishing
	start := time.Now()
	require.NoError(t, l.Lock(ctx))
	assert.Less(t, time.Since(start), 2*time.Second, "the wait is bounded by the holder's TTL")
	require.NoError(t, l.Unlock(ctx))
}

func TestForeignHolder(t *testing.T) {
	srv := redistest.Shared(t)
	c, rc := newClient(t, srv, Options{})
	name := lockName(t)
	l := newLock(t, c, name)
	ctx := NewOwner(testCtx(t, 20*time.Second))
	java := "6f1c2a9e-3b7d-4c1e-9a55-0d2f8e4b7c11:1" // a Java-shaped holder
	rawHolder(t, rc, name, java, 30000)

	assert.ErrorIs(t, l.TryLock(ctx, 0, 0), ErrLocked)
	assert.ErrorIs(t, l.Unlock(ctx), ErrNotHeld)
	assert.Equal(t, map[string]string{java: "1"}, hgetall(t, rc, name), "Go cannot release a Java hold")

	msgs := srv.Listen(t, "redisson_lock__channel:{"+name+"}")
	ok, err := l.ForceUnlock(ctx)
	require.NoError(t, err)
	assert.True(t, ok)
	assert.Equal(t, "0", <-msgs)
	assert.Empty(t, hgetall(t, rc, name))
}

func subscribers(t *testing.T, rc rueidis.Client, name string) int64 {
	ch := "redisson_lock__channel:{" + name + "}"
	m, err := rc.Do(context.Background(), rc.B().PubsubNumsub().Channel(ch).Build()).AsIntMap()
	require.NoError(t, err)
	return m[ch]
}

// failedTries returns the server's PTTL calls: the acquire script calls PTTL exactly when it
// finds the lock held, and no other script calls it.
func failedTries(t *testing.T, rc rueidis.Client) int64 {
	n, err := redistest.CommandCalls(context.Background(), rc, "pttl")
	require.NoError(t, err)
	return n
}

// waitSubscribed waits until n connections subscribe to the lock's channel.
func waitSubscribed(t *testing.T, rc rueidis.Client, name string, n int64) {
	t.Helper()
	require.Eventually(t, func() bool { return subscribers(t, rc, name) >= n }, 5*time.Second, time.Millisecond)
}
