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
	f := newFixture(t, Options{})
	var ov redistest.Overlap
	var unregistered atomic.Int32
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			ctx := NewOwner(context.Background())
			field, _ := f.l.ownerField(ctx)
			for range 300 {
				if f.l.TryLock(ctx, 0, 0) != nil {
					continue
				}
				_, leave := ov.Enter()
				if !renewing(f.c, f.name, field) {
					unregistered.Add(1)
				}
				leave()
				assert.NoError(t, f.l.Unlock(ctx))
			}
		})
	}
	wg.Wait()
	assert.Zero(t, ov.Violations(), "two owners inside at once")
	assert.Zero(t, unregistered.Load(), "a held lock was missing from the renewal registry at unlock")
	assert.Positive(t, ov.Entries())
	assert.Equal(t, 0, f.c.holds.count())
	assert.Equal(t, int64(-2), redistest.PTTL(t, f.rc, f.name))
}

// counterUnderLock increments a Redis counter non-atomically (GET, then SET) under the lock.
func counterUnderLock(t *testing.T, l *Lock, rc rueidis.Client, counter string, ov *redistest.Overlap) {
	ctx := NewOwner(redistest.Context(t, testTimeout))
	require.NoError(t, l.Lock(ctx))
	_, leave := ov.Enter()
	v, err := rc.Do(ctx, rc.B().Get().Key(counter).Build()).AsInt64()
	if rueidis.IsRedisNil(err) {
		err = nil
	}
	require.NoError(t, err)
	require.NoError(t, rc.Do(ctx, rc.B().Set().Key(counter).Value(strconv.FormatInt(v+1, 10)).Build()).Error())
	leave()
	require.NoError(t, l.Unlock(ctx))
}

func TestConcurrencySingleClient(t *testing.T) { // RL-23
	f := newFixture(t, Options{})
	var ov redistest.Overlap
	var wg sync.WaitGroup
	for range 15 {
		wg.Go(func() { counterUnderLock(t, f.l, f.rc, f.name+":count", &ov) })
	}
	wg.Wait()
	assert.Zero(t, ov.Violations())
	n, err := f.rc.Do(context.Background(), f.rc.B().Get().Key(f.name+":count").Build()).AsInt64()
	require.NoError(t, err)
	assert.Equal(t, int64(15), n)
}

func TestConcurrencyManyClients(t *testing.T) { // RL-24 shape: clients × rounds
	srv := redistest.Shared(t)
	name := redistest.Name(t)
	var ov redistest.Overlap
	var wg sync.WaitGroup
	var rc rueidis.Client
	for range 4 {
		c, crc := newClient(t, srv, Options{})
		rc = crc
		l := c.NewLock(name)
		for range 4 {
			wg.Go(func() {
				for range 25 {
					counterUnderLock(t, l, crc, name+":count", &ov)
				}
			})
		}
	}
	wg.Wait()
	assert.Zero(t, ov.Violations())
	n, err := rc.Do(context.Background(), rc.B().Get().Key(name+":count").Build()).AsInt64()
	require.NoError(t, err)
	assert.Equal(t, int64(400), n)
	assert.Equal(t, int64(-2), redistest.PTTL(t, rc, name))
}

// TestWaiterWokenByRelease shows a waiter is woken by the unlock message, not by the
// holder's TTL (30 s with the watchdog).
func TestWaiterWokenByRelease(t *testing.T) {
	f := newFixture(t, Options{})
	la, lb := f.l, f.otherLock(t)
	holder, waiter := f.owners()
	require.NoError(t, la.Lock(holder))
	got := make(chan time.Time, 1)
	go func() {
		assert.NoError(t, lb.Lock(waiter))
		got <- time.Now()
	}()
	waitSubscribed(t, f.rc, f.channel(), 1)
	released := time.Now()
	require.NoError(t, la.Unlock(holder))
	handoff := (<-got).Sub(released)
	t.Logf("handoff %v", handoff)
	assert.Less(t, handoff, 2*time.Second, "woken by the message, long before the 30 s TTL")
	require.NoError(t, lb.Unlock(waiter))
	require.Eventually(t, func() bool { return redistest.NumSub(t, f.rc, f.channel()) == 0 }, 5*time.Second, 5*time.Millisecond)
}

func TestWaitersServedInArrivalOrder(t *testing.T) {
	f := newFixture(t, Options{})
	l, rc, holder := f.l, f.rc, f.ctx
	require.NoError(t, l.Lock(holder))
	order := make(chan int, 3)
	var wg sync.WaitGroup
	defer wg.Wait()
	for i := range 3 {
		ctx := NewOwner(f.base)
		tries := redistest.Calls(t, rc, "pttl")
		wg.Go(func() {
			assert.NoError(t, l.Lock(ctx))
			order <- i
			assert.NoError(t, l.Unlock(ctx))
		})
		// Asleep once it has tried, subscribed and tried again.
		require.Eventually(t, func() bool { return redistest.Calls(t, rc, "pttl") >= tries+2 }, 5*time.Second, time.Millisecond)
	}
	waitSubscribed(t, rc, f.channel(), 1)
	require.NoError(t, l.Unlock(holder))
	for i := range 3 {
		assert.Equal(t, i, <-order)
	}
}

func TestCancelWhileWaitingLeavesNoSubscription(t *testing.T) {
	f := newFixture(t, Options{})
	holder, waiter := f.owners()
	require.NoError(t, f.l.Lock(holder))
	ctx, cancel := context.WithCancel(waiter)
	done := make(chan error, 1)
	go func() { done <- f.l.Lock(ctx) }()
	waitSubscribed(t, f.rc, f.channel(), 1)
	cancel()
	assert.ErrorIs(t, <-done, context.Canceled)
	require.Eventually(t, func() bool { return redistest.NumSub(t, f.rc, f.channel()) == 0 },
		5*time.Second, 5*time.Millisecond)
	require.NoError(t, f.l.Unlock(holder))
}

func TestLostMessageFallsBackToTTL(t *testing.T) {
	f := newFixture(t, Options{})
	rawHolder(t, f.rc, f.name, "gone:1", 500) // a holder that vanishes without publishing
	start := time.Now()
	require.NoError(t, f.l.Lock(f.ctx))
	assert.Less(t, time.Since(start), 2*time.Second, "the wait is bounded by the holder's TTL")
	require.NoError(t, f.l.Unlock(f.ctx))
}

func TestForeignHolder(t *testing.T) {
	f := newFixture(t, Options{})
	java := "6f1c2a9e-3b7d-4c1e-9a55-0d2f8e4b7c11:1" // a Java-shaped holder
	rawHolder(t, f.rc, f.name, java, 30000)

	assert.ErrorIs(t, f.l.TryLock(f.ctx, 0, 0), ErrLocked)
	assert.ErrorIs(t, f.l.Unlock(f.ctx), ErrNotHeld)
	assert.Equal(t, map[string]string{java: "1"}, redistest.HGetAll(t, f.rc, f.name), "Go cannot release a Java hold")

	msgs := f.srv.Listen(t, f.channel())
	ok, err := f.l.ForceUnlock(f.ctx)
	require.NoError(t, err)
	assert.True(t, ok)
	assert.Equal(t, []string{"0"}, redistest.Published(t, f.rc, f.channel(), msgs), "one release message")
	assert.Empty(t, redistest.HGetAll(t, f.rc, f.name))
}

// waitSubscribed waits until n connections subscribe to channel.
func waitSubscribed(t *testing.T, rc rueidis.Client, channel string, n int64) {
	t.Helper()
	require.Eventually(t, func() bool { return redistest.NumSub(t, rc, channel) >= n }, 5*time.Second, time.Millisecond)
}
