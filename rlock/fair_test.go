package rlock

import (
	"context"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/goredisson/goredisson/internal/keys"
	"github.com/goredisson/goredisson/internal/redistest"
)

// fairFixture is a fixture whose lock is a fair lock.
func newFairFixture(t *testing.T, opts Options) *fixture {
	t.Helper()
	f := newFixture(t, opts)
	f.l = f.c.NewFairLock(f.name)
	return f
}

// fairQueue returns the fair lock's queue, oldest first.
func fairQueue(t testing.TB, rc rueidis.Client, name string) []string {
	t.Helper()
	v, err := rc.Do(context.Background(), rc.B().Lrange().Key(keys.FairQueue(name)).Start(0).Stop(-1).Build()).AsStrSlice()
	require.NoError(t, err)
	return v
}

// fairDeadlines returns the fair lock's timeout set: field → deadline in epoch ms.
func fairDeadlines(t testing.TB, rc rueidis.Client, name string) map[string]int64 {
	t.Helper()
	v, err := rc.Do(context.Background(), rc.B().Zrange().Key(keys.FairTimeout(name)).Min("0").Max("-1").Withscores().Build()).AsZScores()
	require.NoError(t, err)
	out := map[string]int64{}
	for _, z := range v {
		out[z.Member] = int64(z.Score)
	}
	return out
}

// queuedAsleep waits until field is queued at position pos (0 first) and subscribed to its
// own channel, with its second attempt (the one after subscribing) done: it is asleep.
func queuedAsleep(t *testing.T, rc rueidis.Client, name, field string, pos int) {
	t.Helper()
	ch := keys.FairWaiterChannel(name, field)
	require.True(t, redistest.Poll(10*time.Second, time.Millisecond, func() bool {
		q := fairQueue(t, rc, name)
		return len(q) > pos && q[pos] == field && redistest.NumSub(t, rc, ch) == 1
	}), "waiter %s not queued at %d and subscribed", field, pos)
}

// drained closes ch, which nobody sends on any more, and returns what it holds.
func drained[T any](ch chan T) []T {
	close(ch)
	var out []T
	for v := range ch {
		out = append(out, v)
	}
	return out
}

// fieldOf returns the hash field of ctx's owner on l.
func fieldOf(t testing.TB, l *Lock, ctx context.Context) string {
	t.Helper()
	field, err := l.ownerField(ctx)
	require.NoError(t, err)
	return field
}

// The fair lock writes Redisson's layout: the RLock hash, the queue and the timeout set,
// one channel per waiter; a release wakes the first waiter on its channel, which then
// unsubscribes.
func TestFairLayoutAndHandoff(t *testing.T) { // FL-21, FL-22
	f := newFairFixture(t, Options{})
	holder, waiter := f.owners()
	hf, wf := fieldOf(t, f.l, holder), fieldOf(t, f.l, waiter)
	require.NoError(t, f.l.Lock(holder))
	require.NoError(t, f.l.Lock(holder), "reentrant")
	assert.Equal(t, map[string]string{hf: "2"}, redistest.HGetAll(t, f.rc, f.name))
	assert.Empty(t, fairQueue(t, f.rc, f.name), "a holder never queues")

	before := time.Now().UnixMilli()
	got := make(chan error, 1)
	go func() { got <- f.l.Lock(waiter) }()
	queuedAsleep(t, f.rc, f.name, wf, 0)
	d := fairDeadlines(t, f.rc, f.name)[wf]
	wait := DefaultFairLockWaitTimeout.Milliseconds()
	assert.InDelta(t, before+DefaultWatchdogTimeout.Milliseconds()+wait, d, 2000,
		"deadline: now + the holder's PTTL + the thread-wait time")
	assert.Zero(t, redistest.NumSub(t, f.rc, f.channel()), "nobody listens on the lock's own channel")

	require.NoError(t, f.l.Unlock(holder))
	assert.Equal(t, map[string]string{hf: "1"}, redistest.HGetAll(t, f.rc, f.name), "partial release: the waiter sleeps on")
	released := time.Now()
	require.NoError(t, f.l.Unlock(holder))
	require.NoError(t, <-got)
	t.Logf("handoff %v", time.Since(released))
	assert.Equal(t, map[string]string{wf: "1"}, redistest.HGetAll(t, f.rc, f.name))
	assert.Empty(t, fairQueue(t, f.rc, f.name))
	assert.Empty(t, fairDeadlines(t, f.rc, f.name))
	require.True(t, redistest.Poll(5*time.Second, time.Millisecond, func() bool {
		return redistest.NumSub(t, f.rc, keys.FairWaiterChannel(f.name, wf)) == 0
	}), "the waiter's subscription ends")
	require.NoError(t, f.l.Unlock(waiter))
	assert.False(t, redistest.Exists(t, f.rc, f.name))
}

// Waiters of several clients are granted the lock in the order they queued.
func TestFairOrder(t *testing.T) { // FL-26
	f := newFairFixture(t, Options{})
	locks := []*Lock{f.l, f.c.NewFairLock(f.name)}
	for range 2 {
		c, _ := newClient(t, f.srv, Options{})
		locks = append(locks, c.NewFairLock(f.name))
	}
	require.NoError(t, f.l.Lock(f.ctx))
	const n = 8
	order := make(chan int, n)
	var wg sync.WaitGroup
	for i := range n {
		l := locks[i%len(locks)]
		ctx := NewOwner(f.base)
		wg.Go(func() {
			assert.NoError(t, l.Lock(ctx))
			order <- i
			assert.NoError(t, l.Unlock(ctx))
		})
		queuedAsleep(t, f.rc, f.name, fieldOf(t, l, ctx), i)
	}
	require.NoError(t, f.l.Unlock(f.ctx))
	wg.Wait()
	assert.Equal(t, []int{0, 1, 2, 3, 4, 5, 6, 7}, drained(order))
	assert.Empty(t, fairQueue(t, f.rc, f.name))
}

// Holders that never unlock: each lease runs out, nobody publishes, and the first waiter
// wakes at the holder's TTL and takes the lock; the queue keeps its order.
func TestFairLeaseExpiryKeepsOrder(t *testing.T) { // FL-01
	f := newFairFixture(t, Options{})
	const lease, n = 300 * time.Millisecond, 4
	require.NoError(t, f.l.LockFor(f.ctx, lease))
	order := make(chan int, n)
	var wg sync.WaitGroup
	start := time.Now()
	for i := range n {
		ctx := NewOwner(f.base)
		wg.Go(func() {
			assert.NoError(t, f.l.TryLock(ctx, 30*time.Second, lease))
			order <- i // and never unlocks
		})
		queuedAsleep(t, f.rc, f.name, fieldOf(t, f.l, ctx), i)
	}
	wg.Wait()
	assert.Equal(t, []int{0, 1, 2, 3}, drained(order))
	assert.Less(t, time.Since(start), 10*time.Second, "each waited about one lease")
}

// A waiter cancelled in the middle of the queue leaves it (the waiters behind it move one
// wait earlier), its subscription ends, and the waiters around it are served in order.
func TestFairCancelMidQueue(t *testing.T) { // FL-05 (acquireFailed shifts the waiters behind)
	f := newFairFixture(t, Options{})
	require.NoError(t, f.l.Lock(f.ctx))
	a, c := f.owners()
	bctx, cancel := context.WithCancel(NewOwner(f.base))
	af, bf, cf := fieldOf(t, f.l, a), fieldOf(t, f.l, bctx), fieldOf(t, f.l, c)
	order := make(chan string, 2)
	var wg sync.WaitGroup
	for i, w := range []struct {
		ctx   context.Context
		field string
	}{{a, af}, {bctx, bf}, {c, cf}} {
		wg.Go(func() {
			err := f.l.Lock(w.ctx)
			if w.field == bf {
				assert.ErrorIs(t, err, context.Canceled)
				return
			}
			assert.NoError(t, err)
			order <- w.field
			assert.NoError(t, f.l.Unlock(w.ctx))
		})
		queuedAsleep(t, f.rc, f.name, w.field, i)
	}
	before := fairDeadlines(t, f.rc, f.name)
	cancel()
	require.True(t, redistest.Poll(10*time.Second, time.Millisecond, func() bool {
		return len(fairQueue(t, f.rc, f.name)) == 2
	}))
	assert.Equal(t, []string{af, cf}, fairQueue(t, f.rc, f.name))
	wait := DefaultFairLockWaitTimeout.Milliseconds()
	assert.Equal(t, map[string]int64{af: before[af], cf: before[cf] - wait}, fairDeadlines(t, f.rc, f.name))
	require.True(t, redistest.Poll(5*time.Second, time.Millisecond, func() bool {
		return redistest.NumSub(t, f.rc, keys.FairWaiterChannel(f.name, bf)) == 0
	}), "the cancelled waiter's subscription ends")

	require.NoError(t, f.l.Unlock(f.ctx))
	wg.Wait()
	assert.Equal(t, []string{af, cf}, drained(order))
}

// TryLock's wait is its thread-wait time; a TryLock whose wait passes leaves the queue;
// TryLock without a wait never queues.
func TestFairTryLock(t *testing.T) { // FL-10, FL-06
	f := newFairFixture(t, Options{})
	holder, waiter := f.owners()
	wf := fieldOf(t, f.l, waiter)
	require.NoError(t, f.l.Lock(holder))

	assert.ErrorIs(t, f.l.TryLock(waiter, 0, 0), ErrLocked)
	assert.Empty(t, fairQueue(t, f.rc, f.name), "a single attempt never queues")

	start := time.Now()
	got := make(chan error, 1)
	go func() { got <- f.l.TryLock(waiter, 1500*time.Millisecond, 0) }()
	queuedAsleep(t, f.rc, f.name, wf, 0)
	assert.InDelta(t, start.UnixMilli()+DefaultWatchdogTimeout.Milliseconds()+1500, fairDeadlines(t, f.rc, f.name)[wf], 1000,
		"the deadline counts TryLock's wait, not FairLockWaitTimeout")
	assert.ErrorIs(t, <-got, ErrLocked)
	assert.Empty(t, fairQueue(t, f.rc, f.name), "gave up: left the queue")
	assert.Empty(t, fairDeadlines(t, f.rc, f.name))
	// A waiter's subscription ends after it leaves, without blocking its call on Redis.
	assert.True(t, redistest.Poll(5*time.Second, time.Millisecond, func() bool {
		return redistest.NumSub(t, f.rc, keys.FairWaiterChannel(f.name, wf)) == 0
	}), "the waiter's subscription ends")

	require.NoError(t, f.l.Unlock(holder))
	require.NoError(t, f.l.TryLock(waiter, 0, 0), "free and nobody queued")
	require.NoError(t, f.l.Unlock(waiter))
}

// A first waiter that died (it neither takes the lock nor leaves the queue) holds the next
// one back only until its deadline: the next one pauses, doubling each pause, never past
// that deadline, and takes the lock once the stale waiter is dropped.
func TestFairDeadWaiterDroppedAtDeadline(t *testing.T) { // FL-08
	f := newFairFixture(t, Options{})
	dead := "6f1c2a9e-3b7d-4c1e-9a55-0d2f8e4b7c11:99"
	deadline := time.UnixMilli(time.Now().Add(1500 * time.Millisecond).UnixMilli())
	redistest.Do(t, f.rc, f.rc.B().Rpush().Key(keys.FairQueue(f.name)).Element(dead).Build())
	redistest.Do(t, f.rc, f.rc.B().Zadd().Key(keys.FairTimeout(f.name)).ScoreMember().
		ScoreMember(float64(deadline.UnixMilli()), dead).Build())
	scripts := redistest.Calls(t, f.rc, "evalsha")
	require.NoError(t, f.l.Lock(f.ctx))
	assert.False(t, time.Now().Before(deadline), "not before the dead waiter's deadline")
	assert.Less(t, time.Since(deadline), 2*time.Second, "soon after it")
	// Two attempts (joining, after subscribing), one read of the deadline, then attempts
	// after pauses of 10 ms doubling, capped at the deadline: 8 for 1.5 s.
	assert.LessOrEqual(t, redistest.Calls(t, f.rc, "evalsha")-scripts, int64(12),
		"paused with a doubling backoff up to the dead waiter's deadline, not polling")
	assert.Empty(t, fairQueue(t, f.rc, f.name))
	require.NoError(t, f.l.Unlock(f.ctx))
}

// When the first waiter gives up while the lock is free (the release went to it), the next
// waiter is woken at once, not at its timer.
func TestFairFirstLeavingWakesNext(t *testing.T) {
	f := newFairFixture(t, Options{})
	// A holder with a long lease that will vanish without a release message.
	java := "6f1c2a9e-3b7d-4c1e-9a55-0d2f8e4b7c11:1"
	rawHolder(t, f.rc, f.name, java, 60000)
	actx, cancel := context.WithCancel(NewOwner(f.base))
	b := NewOwner(f.base)
	af, bf := fieldOf(t, f.l, actx), fieldOf(t, f.l, b)
	aerr := make(chan error, 1)
	go func() { aerr <- f.l.Lock(actx) }()
	queuedAsleep(t, f.rc, f.name, af, 0)
	berr := make(chan error, 1)
	go func() { berr <- f.l.Lock(b) }()
	queuedAsleep(t, f.rc, f.name, bf, 1)

	redistest.Do(t, f.rc, f.rc.B().Del().Key(f.name).Build()) // the holder's key is gone, nobody told
	cancel()
	assert.ErrorIs(t, <-aerr, context.Canceled)
	start := time.Now()
	require.NoError(t, <-berr)
	assert.Less(t, time.Since(start), 5*time.Second, "woken by the leaving waiter, long before the 60 s timer")
	require.NoError(t, f.l.Unlock(b))
}

// Leases and the watchdog work as on the RLock; a hold lost to a force-unlock elsewhere
// ends its Held context; the next waiter is woken by the force-unlock.
func TestFairLeaseWatchdogAndLostHold(t *testing.T) { // FL-12, FL-13 (Go: ErrNotHeld)
	f := newFairFixture(t, Options{WatchdogTimeout: 300 * time.Millisecond})
	a, b := f.owners()
	require.NoError(t, f.l.LockFor(a, 5*time.Second))
	assert.InDelta(t, 5000, redistest.PTTL(t, f.rc, f.name), 500)
	require.NoError(t, f.l.Unlock(a))

	require.NoError(t, f.l.Lock(a))
	held := mustHeld(t, f.l, a)
	holdFor(t, f.l, a, held, 1500*time.Millisecond) // five watchdog timeouts
	got := make(chan error, 1)
	go func() { got <- f.l.Lock(b) }()
	queuedAsleep(t, f.rc, f.name, fieldOf(t, f.l, b), 0)

	c2, _ := newClient(t, f.srv, Options{})
	ok, err := c2.NewFairLock(f.name).ForceUnlock(f.base)
	require.NoError(t, err)
	require.True(t, ok)
	require.NoError(t, <-got, "the force-unlock woke the first waiter")
	select {
	case <-held.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("the lost hold's context did not end")
	}
	assert.ErrorIs(t, context.Cause(held), ErrLockLost)
	assert.ErrorIs(t, context.Cause(held), ErrRemoved)
	assert.ErrorIs(t, f.l.Unlock(a), ErrNotHeld)
	require.NoError(t, f.l.Unlock(b))

	require.NoError(t, f.l.LockFor(a, 200*time.Millisecond))
	require.True(t, redistest.Poll(5*time.Second, 10*time.Millisecond, func() bool { return !redistest.Exists(t, f.rc, f.name) }))
	assert.ErrorIs(t, f.l.Unlock(a), ErrNotHeld, "the lease ran out (Redisson's fair unlock would succeed)")
}

// Owners of several clients never hold the fair lock together.
func TestFairExclusion(t *testing.T) { // FL-24
	name := redistest.Name(t)
	ov := contend(t, redistest.Shared(t), 3, 4, 15, func(c *Client) func(ctx context.Context, inside func()) error {
		l := c.NewFairLock(name)
		return func(ctx context.Context, inside func()) error {
			ctx = NewOwner(ctx)
			if err := l.Lock(ctx); err != nil {
				return err
			}
			inside()
			return l.Unlock(ctx)
		}
	})
	assert.Zero(t, ov.Violations())
	assert.Equal(t, int64(3*4*15), ov.Entries())
}

// The commands a client sends per acquisition do not grow with the number of waiters: a
// release wakes the first waiter only. Counted on a server of the test's own: script calls
// and subscriptions (the latch sweeper's DEL, at most one per Unlock, cannot be told from
// the release script's own DEL in INFO commandstats and is left out).
func TestFairCommandsPerAcquisition(t *testing.T) {
	srv := redistest.Start(t)
	per := map[int]float64{}
	for _, n := range []int{1, 16} {
		name := redistest.Name(t) + ":" + strconv.Itoa(n)
		holderC, rc := newClient(t, srv, Options{})
		holder := holderC.NewFairLock(name)
		hctx := NewOwner(redistest.Context(t, time.Minute))
		require.NoError(t, holder.Lock(hctx))
		var wg sync.WaitGroup
		var ov redistest.Overlap
		var channels []string
		for i := range n {
			c, _ := newClient(t, srv, Options{})
			l := c.NewFairLock(name)
			ctx := NewOwner(redistest.Context(t, time.Minute))
			channels = append(channels, keys.FairWaiterChannel(name, fieldOf(t, l, ctx)))
			wg.Go(func() {
				assert.NoError(t, l.Lock(ctx))
				_, leave := ov.Enter()
				leave()
				assert.NoError(t, l.Unlock(ctx))
			})
			queuedAsleep(t, rc, name, fieldOf(t, l, ctx), i)
		}
		stats := func() int64 {
			s, err := redistest.CommandStats(context.Background(), rc)
			require.NoError(t, err)
			return s["evalsha"] + s["eval"] + s["subscribe"] + s["unsubscribe"] + s["ssubscribe"] + s["sunsubscribe"]
		}
		// The waiters' own commands so far: two attempts and a SUBSCRIBE each.
		before := stats() - int64(3*n)
		require.NoError(t, holder.Unlock(hctx))
		wg.Wait()
		for _, ch := range channels {
			require.True(t, redistest.Poll(5*time.Second, time.Millisecond, func() bool { return redistest.NumSub(t, rc, ch) == 0 }),
				"no subscription left on %s", ch)
		}
		assert.Zero(t, ov.Violations())
		per[n] = float64(stats()-before-1) / float64(n) // less the holder's release
		t.Logf("%d waiters: %.2f script calls and subscriptions per acquisition", n, per[n])
	}
	assert.LessOrEqual(t, per[16], 11.0)
	assert.LessOrEqual(t, per[16], per[1]+0.5, "independent of the number of waiters")
}

// A handle's calls check their input as the RLock's do.
func TestFairMisuse(t *testing.T) {
	f := newFairFixture(t, Options{})
	assert.ErrorIs(t, f.c.NewFairLock("").Lock(f.ctx), ErrEmptyName)
	assert.ErrorIs(t, f.l.Lock(f.base), ErrNoOwner)
	assert.ErrorIs(t, f.l.TryLock(f.ctx, -1, 0), ErrInvalidWait)
	assert.ErrorIs(t, f.l.Unlock(f.ctx), ErrNotHeld)
	_, err := New(context.Background(), f.rc, Options{FairLockWaitTimeout: -1})
	assert.ErrorIs(t, err, ErrInvalidOptions)
	require.NoError(t, f.l.Lock(f.ctx))
	err = f.c.NewFairLock(f.name).TryLock(NewOwner(f.base), 0, 0)
	assert.ErrorIs(t, err, ErrLocked)
	assert.EqualError(t, err, `rlock: TryLock "`+f.name+`": held by another owner`)
	require.NoError(t, f.l.Unlock(f.ctx))
}

// RL-03 for the fair lock: acquisitions cancelled while their script is in flight (which
// runs on the caller's goroutine, detached) leave nothing held, renewed, or queued: a hold
// taken after ctx ended is given back with the fair release, a queue entry is removed with
// FairLeave. Half of them run while another owner holds the lock, so that they queue.
func TestFairCancelledAcquireLeavesNothing(t *testing.T) { // RL-03
	f := newFairFixture(t, Options{}) // a hold left behind would outlive the check by far
	holder := NewOwner(f.base)
	cancelled := 0
	for i := range 400 {
		if i == 200 {
			require.NoError(t, f.l.Lock(holder)) // from here on every attempt queues
		}
		ctx, cancel := context.WithCancel(NewOwner(f.base))
		go func() {
			time.Sleep(time.Duration(i%150) * time.Microsecond)
			cancel()
		}()
		if err := f.l.Lock(ctx); err == nil {
			require.NoError(t, f.l.Unlock(ctx))
		} else {
			require.ErrorIs(t, err, context.Canceled)
			cancelled++
		}
		cancel()
		if i < 200 { // nobody else holds it: a hold the attempt took must be given back at once
			require.True(t, redistest.Poll(5*time.Second, time.Millisecond, func() bool {
				return f.c.holds.count() == 0 && !redistest.Exists(t, f.rc, f.name)
			}), "attempt %d: a hold taken after ctx ended was kept", i)
		}
	}
	t.Logf("%d of 400 acquisitions cancelled", cancelled)
	require.NoError(t, f.l.Unlock(holder))
	require.True(t, redistest.Poll(5*time.Second, 10*time.Millisecond, func() bool {
		return f.c.holds.count() == 0 && !redistest.Exists(t, f.rc, f.name) &&
			len(fairQueue(t, f.rc, f.name)) == 0 && len(fairDeadlines(t, f.rc, f.name)) == 0
	}), "a hold, the lock or a queue entry was left behind: queue %v", fairQueue(t, f.rc, f.name))
}
