package integration

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/goredisson/goredisson/integration/javapeer"
	"github.com/goredisson/goredisson/internal/keys"
	"github.com/goredisson/goredisson/internal/redistest"
	"github.com/goredisson/goredisson/rlock"
)

// fairQueued waits until field is at position pos of the fair lock's queue and subscribed
// to its own channel: subs counts the subscriptions to a channel.
func fairQueued(t *testing.T, e *env, subs func(ch string) int64, name, field string, pos int) {
	t.Helper()
	ch := keys.FairWaiterChannel(name, field)
	var q []string
	ok := redistest.Poll(10*time.Second, time.Millisecond, func() bool {
		v, err := e.rc.Do(e.ctx, e.rc.B().Lrange().Key(keys.FairQueue(name)).Start(0).Stop(-1).Build()).AsStrSlice()
		q = v
		return err == nil && len(v) > pos && v[pos] == field && subs(ch) >= 1
	})
	require.True(t, ok, "%s not queued at %d and subscribed on %s; queue %v", field, pos, ch, q)
}

// TestInteropFair: Go's NewFairLock and Redisson's getFairLock on one name.
//   - They exclude each other, and a waiter on either side is woken by the other side's
//     release, on its own channel, well under the 30 s TTL.
//   - A queue of Go and Java waiters, in alternation, is granted the lock in arrival order;
//     a Java waiter whose tryLock wait passes in the middle of it leaves the queue (Redisson's
//     acquireFailed) and so does a cancelled Go waiter, and neither stalls the next (FL-26, FL-10, FL-05 across sides).
//   - 3 Go and 3 Java owners × 20 rounds increment a counter non-atomically under the lock,
//     and the count is exact (FL-24 across sides).
func TestInteropFair(t *testing.T) {
	forEachVersion(t, func(t *testing.T, v string) {
		e := newEnv(t, v, 0)
		const name, counter = "interopFair:lock", "interopFair:counter"
		l := e.goc.NewFairLock(name)

		subs := func(ch string) int64 { return redistest.NumSub(t, e.rc, ch) }
		t.Run("handoff", func(t *testing.T) { fairHandoff(t, e.in(t), l, name, subs) })
		t.Run("mixed queue order", func(t *testing.T) { fairMixedQueue(t, e.in(t), l, name, subs) })
		t.Run("contention", func(t *testing.T) {
			e := e.in(t)
			lock := func(ctx context.Context) (int64, error) { return 0, l.Lock(ctx) }
			e.contendCounter(t, "fair", name, counter, 3, 20, lock, l.Unlock, nil)
			assert.Empty(t, e.hgetall(name))
			assert.Equal(t, int64(-2), e.pttl(keys.FairQueue(name)), "nobody left queued")
			for _, owner := range []string{"Jfair0", "Jfair1", "Jfair2"} {
				assert.Zero(t, redistest.NumSub(t, e.rc, keys.FairWaiterChannel(name, e.javaField(owner))),
					fmt.Sprintf("%s unsubscribed", owner))
			}
		})
	})
}

// fairHandoff: the fair lock l and the peer's fair lock on name exclude each other, and a
// waiter on either side, asleep in the queue, is woken by the other side's release well
// under the 30 s TTL. subs counts a channel's subscriptions.
func fairHandoff(t *testing.T, e *env, l *rlock.Lock, name string, subs func(string) int64) {
	g := rlock.NewOwner(e.ctx)
	e.handOff(t, "fair", name, l, g, func() {}, func() {})
	assert.Empty(t, e.hgetall(name))

	// Timed both ways, each waiter asleep in the queue first.
	e.peer.Must(t, e.ctx, "J", "fair.lock", name)
	got := make(chan error, 1)
	go func() { got <- l.Lock(g) }()
	fairQueued(t, e, subs, name, e.goField(g), 0)
	released := time.Now()
	e.peer.Must(t, e.ctx, "J", "fair.unlock", name)
	require.NoError(t, <-got)
	javaToGo := time.Since(released)

	waiter := make(chan time.Time, 1)
	go func() {
		r, err := e.peer.Do(e.ctx, "J", "fair.lock", name)
		assert.NoError(t, err)
		assert.True(t, r.OK, "%s", r)
		waiter <- time.Now()
	}()
	fairQueued(t, e, subs, name, e.javaField("J"), 0)
	released = time.Now()
	require.NoError(t, l.Unlock(g))
	goToJava := (<-waiter).Sub(released)
	e.peer.Must(t, e.ctx, "J", "fair.unlock", name)
	t.Logf("%s: handoff Java→Go %v, Go→Java %v (TTL 30 s)", name, javaToGo, goToJava)
	assert.Less(t, javaToGo, 3*time.Second, "woken by Java's release, not by the TTL")
	assert.Less(t, goToJava, 3*time.Second, "woken by Go's release, not by the TTL")
}

// fairMixedQueue: Go and Java waiters queue in alternation behind a Java holder, with a Java
// waiter whose tryLock wait passes and a cancelled Go waiter among them; both leave the
// queue, and the others are granted the lock in arrival order, without sleeping out a TTL.
func fairMixedQueue(t *testing.T, e *env, l *rlock.Lock, name string, subs func(string) int64) {
	e.peer.Must(t, e.ctx, "H", "fair.lock", name)
	var mu sync.Mutex
	var order []string
	note := func(who string) {
		mu.Lock()
		order = append(order, who)
		mu.Unlock()
	}
	var wg sync.WaitGroup
	pos := 0
	queued := func(field string) {
		fairQueued(t, e, subs, name, field, pos)
		pos++
	}
	goWaiter := func(who string) {
		ctx := rlock.NewOwner(e.ctx)
		wg.Go(func() {
			if !assert.NoError(t, l.Lock(ctx), who) {
				return
			}
			note(who)
			assert.NoError(t, l.Unlock(ctx))
		})
		queued(e.goField(ctx))
	}
	javaWaiter := func(who string) {
		field := e.javaField(who)
		wg.Go(func() {
			r, err := e.peer.Do(e.ctx, who, "fair.lock", name)
			if !assert.NoError(t, err) || !assert.True(t, r.OK, "%s: %s", who, r) {
				return
			}
			note(who)
			e.peer.Must(t, e.ctx, who, "fair.unlock", name)
		})
		queued(field)
	}
	goWaiter("G1")
	javaWaiter("J1")
	// A Java waiter that gives up while queued: tryLock's wait passes.
	quitter := e.javaField("JQ")
	quit := make(chan string, 1)
	go func() {
		r, _ := e.peer.Do(e.ctx, "JQ", "fair.trylock", name, "4000", "-1")
		quit <- r.Value
	}()
	queued(quitter)
	goWaiter("G2")
	// A Go waiter cancelled while queued.
	cctx, cancel := context.WithCancel(rlock.NewOwner(e.ctx))
	cerr := make(chan error, 1)
	go func() { cerr <- l.Lock(cctx) }()
	queued(e.goField(cctx))
	javaWaiter("J2")
	goWaiter("G3")

	cancel()
	assert.ErrorIs(t, <-cerr, context.Canceled)
	assert.Equal(t, "false", <-quit, "the Java tryLock's wait passed")
	queue, err := e.rc.Do(e.ctx, e.rc.B().Lrange().Key(keys.FairQueue(name)).Start(0).Stop(-1).Build()).AsStrSlice()
	require.NoError(t, err)
	assert.Len(t, queue, 5, "both left the queue: %v", queue)
	assert.NotContains(t, queue, quitter)

	start := time.Now()
	e.peer.Must(t, e.ctx, "H", "fair.unlock", name)
	wg.Wait()
	assert.Equal(t, []string{"G1", "J1", "G2", "J2", "G3"}, order, "arrival order, across Java and Go")
	t.Logf("%s: 5 handoffs in %v", name, time.Since(start))
	assert.Less(t, time.Since(start), 10*time.Second, "no waiter slept until a TTL")
	assert.Empty(t, e.hgetall(name))
	assert.Equal(t, int64(-2), e.pttl(keys.FairQueue(name)), "the queue is empty (deleted)")
}

// testFair runs the fair lock's handoff and mixed-queue scenarios on the cluster, on both
// of the env's names.
func (c *clusterEnv) testFair(t *testing.T) {
	subs := func(ch string) int64 {
		s, cls, _ := subCounts(t, c.nodes, ch)
		return s + cls
	}
	for i, name := range c.names(t, "fair") {
		l := c.goc.NewFairLock(name)
		kind := []string{"plain", "tagged"}[i]
		t.Run(kind+" handoff", func(t *testing.T) { fairHandoff(t, c.env(t), l, name, subs) })
		t.Run(kind+" mixed queue order", func(t *testing.T) { fairMixedQueue(t, c.env(t), l, name, subs) })
	}
}

// TestInteropFairLateFirstWaiter documents a quirk of Redisson's fair lock: while
// the lock is free and the first waiter has not taken it (here a waiter that died, whose
// deadline has not passed yet), the fair acquire replies 0 to the waiters behind it, and
// Redisson's waiting loop runs the script again at once, over and over, until the first
// waiter's deadline passes or its own wait ends. A goredisson waiter in the same place
// pauses 10 ms, then twice as long each time, never past the first waiter's deadline. Each
// side waits 1 s here (TryLock), and the test counts the script calls of each.
func TestInteropFairLateFirstWaiter(t *testing.T) {
	forEachVersion(t, func(t *testing.T, v string) {
		e := newEnv(t, v, 0)
		const name = "interopFairLate:lock"
		dead := "0b9a4d3e-9a7c-4d0e-8f3e-2b1a5c6d7e8f:99"
		deadline := time.Now().Add(time.Minute).UnixMilli()
		redistest.Do(t, e.rc, e.rc.B().Rpush().Key(keys.FairQueue(name)).Element(dead).Build())
		redistest.Do(t, e.rc, e.rc.B().Zadd().Key(keys.FairTimeout(name)).ScoreMember().ScoreMember(float64(deadline), dead).Build())
		scripts := func() int64 {
			s, err := redistest.CommandStats(e.ctx, e.rc)
			require.NoError(t, err)
			return s["evalsha"] + s["eval"]
		}

		// Warm the peer's pub/sub connection first: a fresh Redisson opens it at its first
		// subscription, which can take much of a 1 s wait.
		e.peer.Must(t, e.ctx, "W", "fair.lock", name+":warm")
		assert.Equal(t, "false", e.peer.Must(t, e.ctx, "J", "fair.trylock", name+":warm", "200", "-1"))
		e.peer.Must(t, e.ctx, "W", "fair.unlock", name+":warm")

		before := scripts()
		assert.Equal(t, "false", e.peer.Must(t, e.ctx, "J", "fair.trylock", name, "1000", "-1"))
		java := scripts() - before
		before = scripts()
		assert.ErrorIs(t, e.goc.NewFairLock(name).TryLock(rlock.NewOwner(e.ctx), time.Second, 0), rlock.ErrLocked)
		goCalls := scripts() - before
		t.Logf("script calls in a 1 s wait behind a late first waiter of a free lock: Java %d, Go %d", java, goCalls)
		if javapeer.Has(v, javapeer.FairQueuedPTTL) {
			assert.Greater(t, java, int64(100), "Redisson retries without sleeping")
		} else {
			// Before 3.32.0 a queued waiter is told to wait out its queue deadline minus the
			// thread-wait time: about a minute here, so it sleeps out its 1 s wait instead.
			assert.Less(t, java, int64(20), "Redisson %s sleeps on its queue deadline", v)
		}
		// Go: two attempts, a read of the first waiter's deadline, attempts after pauses of
		// 10 ms doubling (7 in 1 s), the leave; three scripts are new to this server
		// (EVALSHA, NOSCRIPT, EVAL).
		assert.LessOrEqual(t, goCalls, int64(16), "goredisson pauses with a doubling backoff")
		q, err := e.rc.Do(e.ctx, e.rc.B().Lrange().Key(keys.FairQueue(name)).Start(0).Stop(-1).Build()).AsStrSlice()
		require.NoError(t, err)
		assert.Equal(t, []string{dead}, q, "both left the queue; the dead waiter stays until its deadline")
	})
}
