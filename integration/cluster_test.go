package integration

// Redis Cluster tests of rlock on a 6-node loopback cluster (redistest.StartCluster):
// reliability.md RL-11 and RL-17, the unlock handoff in each pub/sub mode, watchdog renewal
// across slots, and the fast forms of fault F11 (kill -9 of a master, CLUSTER FAILOVER under
// load, SCRIPT FLUSH). The load harness shared with sentinel_test.go (F10) is at the end.

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/goredisson/goredisson/internal/redistest"
	"github.com/goredisson/goredisson/rlock"
)

// lockChannelOf is the unlock channel of lock name as docs/PROTOCOL.md defines it, written
// out here rather than taken from the library: Redisson's prefixName keeps a name that
// already holds '{' verbatim (its own hash tag decides the slot) and wraps any other name in
// braces, so that the channel always hashes to the lock's slot.
func lockChannelOf(name string) string {
	if strings.Contains(name, "{") {
		return "redisson_lock__channel:" + name
	}
	return "redisson_lock__channel:{" + name + "}"
}

// newLockClient returns an rlock client on rc, closed in t.Cleanup (before rc, which was
// created earlier).
func newLockClient(t *testing.T, rc rueidis.Client, opts rlock.Options) *rlock.Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := rlock.New(ctx, rc, opts)
	require.NoError(t, err)
	t.Cleanup(c.Close)
	return c
}

func newLock(t *testing.T, c *rlock.Client, name string) *rlock.Lock {
	t.Helper()
	l, err := c.NewLock(name)
	require.NoError(t, err)
	return l
}

// within returns ctx bounded by d, for one operation.
func within(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, d)
}

// namesOn returns n lock names "prefix<i>" whose slots are served by master, each in a
// different slot.
func namesOn(t *testing.T, cl *redistest.Cluster, master, prefix string, n int) []string {
	t.Helper()
	var out []string
	for i := 0; len(out) < n; i++ {
		require.Less(t, i, 1000, "no %d names of prefix %q on %s", n, prefix, master)
		name := fmt.Sprintf("%s%d", prefix, i)
		if cl.MasterOf(t, name) == master {
			out = append(out, name)
		}
	}
	return out
}

// subCounts returns, summed over the given nodes, how many clients are subscribed to ch with
// SSUBSCRIBE (PUBSUB SHARDNUMSUB) and with SUBSCRIBE (PUBSUB NUMSUB). Both are node-local.
func subCounts(t *testing.T, nodes map[string]rueidis.Client, ch string) (sharded, classic int64, where string) {
	t.Helper()
	ctx, cancel := within(context.Background(), 5*time.Second)
	defer cancel()
	var parts []string
	for _, addr := range slices.Sorted(maps.Keys(nodes)) {
		nc := nodes[addr]
		s, err := nc.Do(ctx, nc.B().PubsubShardnumsub().Channel(ch).Build()).AsIntMap()
		require.NoError(t, err, "PUBSUB SHARDNUMSUB on %s", addr)
		c, err := nc.Do(ctx, nc.B().PubsubNumsub().Channel(ch).Build()).AsIntMap()
		require.NoError(t, err, "PUBSUB NUMSUB on %s", addr)
		sharded += s[ch]
		classic += c[ch]
		if s[ch]+c[ch] > 0 {
			parts = append(parts, fmt.Sprintf("%s: shard=%d classic=%d", addr, s[ch], c[ch]))
		}
	}
	return sharded, classic, strings.Join(parts, "; ")
}

// waitFor polls cond every 20 ms until it returns true or d passes; it reports whether cond
// became true.
func waitFor(d time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(d)
	for {
		if cond() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestClusterLocks runs the fault-free cluster scenarios on one cluster, one after the other.
func TestClusterLocks(t *testing.T) {
	cl := redistest.StartCluster(t)
	rc := cl.Client(t)
	nodes := map[string]rueidis.Client{}
	for _, addr := range cl.Addrs() {
		nodes[addr] = cl.NodeClient(t, addr)
	}

	// RL-11 testInCluster: three times lock; isLocked true; unlock; isLocked false, for a
	// plain name and a name with its own hash tag. The lock hash and its channel share a slot.
	t.Run("RL11_InCluster", func(t *testing.T) {
		c := newLockClient(t, rc, rlock.Options{})
		ctx, cancel := within(context.Background(), 20*time.Second)
		defer cancel()
		for _, name := range []string{"order:42", "{user:7}:profile"} {
			ch := lockChannelOf(name)
			ks, err := rc.Do(ctx, rc.B().ClusterKeyslot().Key(name).Build()).AsInt64()
			require.NoError(t, err)
			cs, err := rc.Do(ctx, rc.B().ClusterKeyslot().Key(ch).Build()).AsInt64()
			require.NoError(t, err)
			require.Equal(t, ks, cs, "CLUSTER KEYSLOT %q = %d but its channel %q = %d", name, ks, ch, cs)
			t.Logf("%q and %q: slot %d on %s", name, ch, ks, cl.MasterOf(t, name))

			l := newLock(t, c, name)
			octx := rlock.NewOwner(ctx)
			for round := range 3 {
				require.NoError(t, l.Lock(octx), "round %d: Lock", round)
				locked, err := l.IsLocked(ctx)
				require.NoError(t, err)
				require.True(t, locked, "round %d: IsLocked after Lock", round)
				require.NoError(t, l.Unlock(octx), "round %d: Unlock", round)
				locked, err = l.IsLocked(ctx)
				require.NoError(t, err)
				require.False(t, locked, "round %d: IsLocked after Unlock", round)
			}
		}
	})

	// RL-17 testLockFailoverInCluster: 30 times tryLock() then unlock on one name, no error.
	t.Run("RL17_TryLockUnlock30", func(t *testing.T) {
		c := newLockClient(t, rc, rlock.Options{})
		ctx, cancel := within(context.Background(), 20*time.Second)
		defer cancel()
		l := newLock(t, c, "rl17:lock")
		octx := rlock.NewOwner(ctx)
		for i := range 30 {
			require.NoError(t, l.TryLock(octx, 0, 0), "TryLock %d", i)
			require.NoError(t, l.Unlock(octx), "Unlock %d", i)
		}
		locked, err := l.IsLocked(ctx)
		require.NoError(t, err)
		require.False(t, locked)
	})

	// The unlock handoff between two clients in each pub/sub mode: a waiter on client B is
	// woken by client A's Unlock long before the 30 s watchdog lease would have let it in, it
	// waits on the subscription kind of its mode, and leaves no subscription behind.
	for _, tc := range []struct {
		mode    rlock.PubSubMode
		name    string
		sharded bool // Redis 7 answers PUBSUB SHARDNUMSUB, so Auto subscribes sharded
	}{
		{rlock.PubSubAuto, "handoff:auto", true},
		{rlock.PubSubSharded, "{user:7}:handoff", true},
		{rlock.PubSubClassic, "handoff:classic", false},
	} {
		t.Run(fmt.Sprintf("Handoff_%s", modeName(tc.mode)), func(t *testing.T) {
			testHandoff(t, cl, nodes, tc.mode, tc.name, tc.sharded)
		})
	}

	// Watchdog renewal across slots: locks with a 900 ms watchdog on names in several slots
	// (on at least two masters) stay held for 3 s, renewed every 300 ms.
	t.Run("Renewal_MultiSlot", func(t *testing.T) {
		const watchdog = 900 * time.Millisecond
		c := newLockClient(t, rc, rlock.Options{WatchdogTimeout: watchdog})
		ctx, cancel := within(context.Background(), 20*time.Second)
		defer cancel()
		names := []string{"renew:a", "renew:b", "renew:c", "renew:d", "{renew}:e", "{renew}:f"}
		masters := map[string]bool{}
		for _, n := range names {
			masters[cl.MasterOf(t, n)] = true
		}
		require.GreaterOrEqual(t, len(masters), 2, "names %v all on one master", names)
		octx := rlock.NewOwner(ctx)
		locks := make([]*rlock.Lock, len(names))
		for i, n := range names {
			locks[i] = newLock(t, c, n)
			require.NoError(t, locks[i].Lock(octx))
		}
		start, polls := time.Now(), 0
		for time.Since(start) < 3*time.Second {
			for _, l := range locks {
				held, err := l.IsHeld(octx)
				require.NoError(t, err)
				require.True(t, held, "%s no longer held %v after Lock", l.Name(), time.Since(start))
				ttl, err := l.RemainTTL(ctx)
				require.NoError(t, err)
				require.LessOrEqual(t, ttl, watchdog, "%s TTL", l.Name())
			}
			polls++
			time.Sleep(100 * time.Millisecond)
		}
		t.Logf("%d locks on %d masters held %v with a %v watchdog (%d polls)", len(names), len(masters), time.Since(start).Round(time.Millisecond), watchdog, polls)
		for _, l := range locks {
			require.NoError(t, l.Unlock(octx))
			locked, err := l.IsLocked(ctx)
			require.NoError(t, err)
			require.False(t, locked, l.Name())
		}
	})

	// F11 (NOSCRIPT stand-in): SCRIPT FLUSH on every node while a watchdog lock is held; the
	// held lock keeps being renewed and released, and new locks on every master work, the
	// scripts being reloaded on NOSCRIPT.
	t.Run("F11_ScriptFlush", func(t *testing.T) {
		const watchdog = 900 * time.Millisecond
		c := newLockClient(t, rc, rlock.Options{WatchdogTimeout: watchdog})
		ctx, cancel := within(context.Background(), 20*time.Second)
		defer cancel()
		octx := rlock.NewOwner(ctx)
		held := newLock(t, c, "flush:held")
		require.NoError(t, held.Lock(octx))
		hctx, hcancel, err := held.Held(octx)
		require.NoError(t, err)
		defer hcancel()
		var others []*rlock.Lock
		masters := map[string]bool{}
		for i := 0; len(masters) < 3; i++ {
			name := fmt.Sprintf("flush:%d", i)
			if m := cl.MasterOf(t, name); !masters[m] {
				masters[m] = true
				others = append(others, newLock(t, c, name))
			}
		}
		// Every script has run on every master at least once before the flush.
		for _, l := range others {
			require.NoError(t, l.Lock(octx))
			require.NoError(t, l.Unlock(octx))
		}
		for addr, nc := range nodes {
			require.NoError(t, nc.Do(ctx, nc.B().ScriptFlush().Build()).Error(), "SCRIPT FLUSH on %s", addr)
		}
		time.Sleep(2 * watchdog) // renewals run after the flush
		require.NoError(t, context.Cause(hctx), "held lock lost after SCRIPT FLUSH")
		ok, err := held.IsHeld(octx)
		require.NoError(t, err)
		require.True(t, ok, "held lock not renewed after SCRIPT FLUSH")
		for _, l := range others {
			require.NoError(t, l.TryLock(octx, time.Second, 0), "%s after SCRIPT FLUSH", l.Name())
			require.NoError(t, l.Unlock(octx), "%s after SCRIPT FLUSH", l.Name())
		}
		require.NoError(t, held.Unlock(octx))
		require.ErrorIs(t, context.Cause(hctx), rlock.ErrReleased)
	})
}

func modeName(m rlock.PubSubMode) string {
	switch m {
	case rlock.PubSubAuto:
		return "Auto"
	case rlock.PubSubSharded:
		return "Sharded"
	case rlock.PubSubClassic:
		return "Classic"
	}
	return fmt.Sprint(int(m))
}

func testHandoff(t *testing.T, cl *redistest.Cluster, nodes map[string]rueidis.Client, mode rlock.PubSubMode, name string, sharded bool) {
	ctx, cancel := within(context.Background(), 25*time.Second)
	defer cancel()
	a := newLockClient(t, cl.Client(t), rlock.Options{PubSub: mode})
	b := newLockClient(t, cl.Client(t), rlock.Options{PubSub: mode})
	la, lb := newLock(t, a, name), newLock(t, b, name)
	ctxA, ctxB := rlock.NewOwner(ctx), rlock.NewOwner(ctx)
	master, ch := cl.MasterOf(t, name), lockChannelOf(name)

	require.NoError(t, la.Lock(ctxA))
	type result struct {
		err error
		at  time.Time
	}
	got := make(chan result, 1)
	go func() {
		wctx, wcancel := within(ctxB, 10*time.Second)
		defer wcancel()
		err := lb.Lock(wctx)
		got <- result{err, time.Now()}
	}()

	// The waiter subscribes with its mode's kind: sharded on the slot's master, or classic on
	// whichever node the cluster client picked.
	var s, c int64
	var where string
	require.True(t, waitFor(5*time.Second, func() bool {
		s, c, where = subCounts(t, nodes, ch)
		return s+c > 0
	}), "the waiter never subscribed to %s", ch)
	if sharded {
		ms, _, _ := subCounts(t, map[string]rueidis.Client{master: nodes[master]}, ch)
		assert.Equal(t, int64(1), ms, "SHARDNUMSUB %s on the slot's master %s (all: %s)", ch, master, where)
		assert.Equal(t, int64(1), s, "sharded subscriptions to %s (%s)", ch, where)
		assert.Zero(t, c, "classic subscriptions to %s in sharded mode (%s)", ch, where)
	} else {
		assert.Equal(t, int64(1), c, "classic subscriptions to %s (%s)", ch, where)
		assert.Zero(t, s, "sharded subscriptions to %s in classic mode (%s)", ch, where)
	}
	t.Logf("mode %s: waiter subscribed to %s (slot master %s): %s", modeName(mode), ch, master, where)

	time.Sleep(200 * time.Millisecond) // let the waiter's second attempt fail and it sleep
	select {
	case r := <-got:
		t.Fatalf("waiter returned %v while A holds the lock", r.err)
	default:
	}
	unlockAt := time.Now()
	require.NoError(t, la.Unlock(ctxA))
	var r result
	select {
	case r = <-got:
	case <-time.After(15 * time.Second):
		t.Fatal("waiter still blocked 15 s after the unlock")
	}
	require.NoError(t, r.err, "waiter's Lock")
	latency := r.at.Sub(unlockAt)
	t.Logf("mode %s: handoff latency %v (watchdog lease 30 s)", modeName(mode), latency)
	assert.Less(t, latency, 2*time.Second, "waiter woke %v after the unlock", latency)

	// The waiter's subscription ends once it has the lock.
	if !waitFor(5*time.Second, func() bool {
		s, c, where = subCounts(t, nodes, ch)
		return s+c == 0
	}) {
		t.Errorf("subscriptions to %s left after the waiter returned: %s", ch, where)
	}
	require.NoError(t, lb.Unlock(ctxB))
}

// TestClusterF11KillMaster is the fast form of F11 with kill -9: while 4 goroutines on two
// clients lock and unlock names served by one master, that master is SIGKILLed and its
// replica takes over. No operation may hang, errors are allowed only in the failover window,
// and the loops succeed again after it. Alongside: a waiter blocked on a sharded
// subscription during the failover is woken on the new master, and a watchdog lock on
// another master stays held.
func TestClusterF11KillMaster(t *testing.T) {
	const watchdog = 3 * time.Second
	cl := redistest.StartCluster(t)
	ctx, cancel := within(context.Background(), 90*time.Second)
	defer cancel()
	a := newLockClient(t, cl.Client(t), rlock.Options{WatchdogTimeout: watchdog})
	b := newLockClient(t, cl.Client(t), rlock.Options{WatchdogTimeout: watchdog})

	target := cl.MasterOf(t, "f11:lock:0")
	replica := cl.ReplicaOf(t, target)
	names := namesOn(t, cl, target, "f11:lock:", 3)
	handoff := namesOn(t, cl, target, "f11:handoff:", 1)[0]
	var other string
	for i := 0; other == ""; i++ {
		if n := fmt.Sprintf("f11:other:%d", i); cl.MasterOf(t, n) != target {
			other = n
		}
	}
	newNode := cl.NodeClient(t, replica)
	oldNode := cl.NodeClient(t, target)
	t.Logf("master %s (replica %s) serves %v and %s; %s is elsewhere", target, replica, names, handoff, other)

	// Watchdog holds on a client with a 10 s watchdog (longer than the failover): one on
	// another master, which must stay held across the failover, and one on the master that
	// dies, so that this client's renewal rounds also carry calls to the dead node.
	wd := newLockClient(t, cl.Client(t), rlock.Options{WatchdogTimeout: 10 * time.Second})
	otherOwner := rlock.NewOwner(ctx)
	ol := newLock(t, wd, other)
	require.NoError(t, ol.Lock(otherOwner))
	otherHeld, otherCancel, err := ol.Held(otherOwner)
	require.NoError(t, err)
	defer otherCancel()
	victim := newLock(t, wd, namesOn(t, cl, target, "f11:victim:", 1)[0])
	require.NoError(t, victim.Lock(otherOwner))

	// A holder with a 20 s lease and a waiter blocked on the sharded subscription.
	hOwner, wOwner := rlock.NewOwner(ctx), rlock.NewOwner(ctx)
	hl, wl := newLock(t, a, handoff), newLock(t, b, handoff)
	require.NoError(t, hl.LockFor(hOwner, 20*time.Second))
	wDone := make(chan time.Time, 1)
	var wErr error
	go func() {
		wctx, wcancel := within(wOwner, 40*time.Second)
		defer wcancel()
		wErr = wl.Lock(wctx)
		wDone <- time.Now()
	}()
	hch := lockChannelOf(handoff)
	require.True(t, waitFor(5*time.Second, func() bool {
		s, _, _ := subCounts(t, map[string]rueidis.Client{target: oldNode}, hch)
		return s == 1
	}), "waiter not subscribed on %s", target)

	ld := startLoad(t, loadConfig{
		workers:   4,
		names:     names,
		clients:   []*rlock.Client{a, b},
		acquire:   func(ctx context.Context, l *rlock.Lock) error { return l.Lock(ctx) },
		opTimeout: 5 * time.Second,
		hold:      2 * time.Millisecond,
		every:     10 * time.Millisecond,
	})
	time.Sleep(1500 * time.Millisecond)

	killAt := time.Now()
	cl.Kill(t, target)
	promoted := cl.MasterOf(t, names[0])
	recoveredAt := time.Now()
	require.Equal(t, replica, promoted, "slot master after the kill")
	t.Logf("kill -9 %s: %s serves the slots %v later", target, promoted, recoveredAt.Sub(killAt).Round(time.Millisecond))
	// Errors are tolerated for operations started before the cluster recovered, plus one
	// watchdog lease: a hold whose release the replica never received (or whose acquire
	// reply was lost) lives on the new master until its lease runs out.
	windowEnd := recoveredAt.Add(watchdog + time.Second)

	// The waiter resubscribes on the new master; the holder's unlock there wakes it.
	resub := waitFor(10*time.Second, func() bool {
		s, _, _ := subCounts(t, map[string]rueidis.Client{replica: newNode}, hch)
		return s == 1
	})
	t.Logf("waiter resubscribed on %s: %v (%v after the kill)", replica, resub, time.Since(killAt).Round(time.Millisecond))
	assert.True(t, resub, "waiter's sharded subscription not restored on the new master")
	unlockAt := time.Now()
	herr := hl.Unlock(hOwner)
	t.Logf("holder's Unlock after the failover: %v", herr)
	select {
	case at := <-wDone:
		require.NoError(t, wErr, "waiter's Lock")
		t.Logf("waiter acquired %v after the holder's unlock", at.Sub(unlockAt).Round(time.Millisecond))
		if herr == nil {
			assert.Less(t, at.Sub(unlockAt), 3*time.Second, "waiter woke late after the unlock on the new master")
		}
		require.NoError(t, wl.Unlock(wOwner))
	case <-time.After(25 * time.Second):
		t.Fatal("waiter still blocked 25 s after the holder's unlock")
	}

	ld.waitSuccessesAfter(t, windowEnd, 3, 20*time.Second)
	ld.finish(t)
	rep := ld.check(t, killAt, windowEnd)
	t.Logf("F11 kill -9: %s", rep)

	// The hold on the other master was renewed throughout; the one on the dead master
	// survived too if the replica had it, which it almost always has.
	assert.NoError(t, context.Cause(otherHeld), "watchdog hold on an unaffected master")
	ok, err := ol.IsHeld(otherOwner)
	assert.NoError(t, err)
	assert.True(t, ok, "watchdog hold on an unaffected master lost across the failover")
	assert.NoError(t, ol.Unlock(otherOwner))
	t.Logf("watchdog hold on the killed master's slot after the failover: Unlock = %v", victim.Unlock(otherOwner))
}

// TestClusterF11ManualFailover is the fast form of F11 with CLUSTER FAILOVER: the same load,
// then a graceful failover to the replica and, after it, a forced one back. It logs the
// errors each causes; graceful failover is expected to cause none.
func TestClusterF11ManualFailover(t *testing.T) {
	const watchdog = 3 * time.Second
	cl := redistest.StartCluster(t)
	a := newLockClient(t, cl.Client(t), rlock.Options{WatchdogTimeout: watchdog})
	b := newLockClient(t, cl.Client(t), rlock.Options{WatchdogTimeout: watchdog})
	target := cl.MasterOf(t, "f11m:lock:0")
	replica := cl.ReplicaOf(t, target)
	names := namesOn(t, cl, target, "f11m:lock:", 3)

	ld := startLoad(t, loadConfig{
		workers:   4,
		names:     names,
		clients:   []*rlock.Client{a, b},
		acquire:   func(ctx context.Context, l *rlock.Lock) error { return l.Lock(ctx) },
		opTimeout: 5 * time.Second,
		hold:      2 * time.Millisecond,
		every:     10 * time.Millisecond,
	})
	time.Sleep(time.Second)

	gracefulAt := time.Now()
	cl.Failover(t, replica, false)
	gracefulDone := time.Now()
	require.Equal(t, replica, cl.MasterOf(t, names[0]))
	t.Logf("CLUSTER FAILOVER to %s took %v", replica, gracefulDone.Sub(gracefulAt).Round(time.Millisecond))
	time.Sleep(1500 * time.Millisecond)

	forceAt := time.Now()
	cl.Failover(t, target, true)
	forceDone := time.Now()
	require.Equal(t, target, cl.MasterOf(t, names[0]))
	t.Logf("CLUSTER FAILOVER FORCE back to %s took %v", target, forceDone.Sub(forceAt).Round(time.Millisecond))
	ld.waitSuccessesAfter(t, forceDone.Add(time.Second), 3, 15*time.Second)
	ld.finish(t)

	graceful := ld.errorsBetween(gracefulAt, forceAt)
	forced := ld.errorsBetween(forceAt, time.Now())
	t.Logf("graceful failover: %d errors %v; forced failover: %d errors %v", total(graceful), graceful, total(forced), forced)
	// A graceful failover hands over with the master paused until the replica caught up:
	// nothing is lost, and every command is redirected rather than failed.
	assert.Zero(t, total(graceful), "errors during a graceful CLUSTER FAILOVER: %v", graceful)
	rep := ld.check(t, gracefulAt, forceDone.Add(time.Second))
	t.Logf("F11 CLUSTER FAILOVER: %s", rep)
}

// --- load harness, shared with sentinel_test.go ----------------------------------------------

// loadConfig describes a lock/unlock load: workers goroutines, worker i on
// clients[i%len(clients)], each iteration acquiring names[(i+iteration)%len] for a newly
// minted owner, holding it for hold, releasing it, then pausing for every.
//
// The owner is minted per iteration (one task per cycle, as rlock's doc advises) and not per
// worker: a failover that loses a release leaves the releasing owner's hold count one too
// high on the new master, and an owner that keeps re-entering that name then keeps the
// orphaned hold alive for as long as it loops (each re-entry resets the TTL), starving every
// other owner. With one owner per cycle the orphan ends with its lease.
type loadConfig struct {
	workers   int
	names     []string
	clients   []*rlock.Client
	acquire   func(ctx context.Context, l *rlock.Lock) error
	opTimeout time.Duration // ctx deadline of each acquire
	hold      time.Duration
	every     time.Duration
}

type opRecord struct {
	worker     int
	op         string // "acquire" or "unlock"
	name       string
	start, end time.Time
	err        error
}

// load runs a loadConfig and records every operation. An in-process overlap detector counts,
// per name, a violation whenever a worker's acquire returns while another worker is between
// its own acquire and unlock.
type load struct {
	cfg    loadConfig
	stop   chan struct{}
	done   chan struct{}
	inside map[string]*atomic.Int32

	mu         sync.Mutex
	ops        []opRecord
	violations []string
}

func startLoad(t *testing.T, cfg loadConfig) *load {
	t.Helper()
	ld := &load{cfg: cfg, stop: make(chan struct{}), done: make(chan struct{}), inside: map[string]*atomic.Int32{}}
	for _, n := range cfg.names {
		ld.inside[n] = new(atomic.Int32)
	}
	locks := make([]map[string]*rlock.Lock, len(cfg.clients))
	for i, c := range cfg.clients {
		locks[i] = map[string]*rlock.Lock{}
		for _, n := range cfg.names {
			locks[i][n] = newLock(t, c, n)
		}
	}
	var wg sync.WaitGroup
	for w := range cfg.workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ld.work(w, locks[w%len(locks)])
		}()
	}
	go func() { wg.Wait(); close(ld.done) }()
	t.Cleanup(func() { ld.finish(t) })
	return ld
}

func (ld *load) work(w int, locks map[string]*rlock.Lock) {
	for i := 0; ; i++ {
		select {
		case <-ld.stop:
			return
		default:
		}
		// One owner per iteration, as one task per lock/unlock cycle: see loadConfig.
		owner := rlock.NewOwner(context.Background())
		name := ld.cfg.names[(w+i)%len(ld.cfg.names)]
		l := locks[name]
		actx, cancel := within(owner, ld.cfg.opTimeout)
		start := time.Now()
		err := ld.cfg.acquire(actx, l)
		cancel()
		ld.record(opRecord{w, "acquire", name, start, time.Now(), err})
		if err == nil {
			in := ld.inside[name]
			if n := in.Add(1); n != 1 {
				ld.violation(fmt.Sprintf("worker %d acquired %s at %s with %d other holder(s) inside",
					w, name, time.Now().Format("15:04:05.000"), n-1))
			}
			time.Sleep(ld.cfg.hold)
			in.Add(-1)
			start = time.Now()
			err = l.Unlock(owner)
			ld.record(opRecord{w, "unlock", name, start, time.Now(), err})
		}
		time.Sleep(ld.cfg.every)
	}
}

func (ld *load) record(r opRecord) {
	ld.mu.Lock()
	ld.ops = append(ld.ops, r)
	ld.mu.Unlock()
}

func (ld *load) violation(s string) {
	ld.mu.Lock()
	ld.violations = append(ld.violations, s)
	ld.mu.Unlock()
}

func (ld *load) records() []opRecord {
	ld.mu.Lock()
	defer ld.mu.Unlock()
	return slices.Clone(ld.ops)
}

// finish stops the workers and waits for them; an operation that does not return within its
// bound (acquire: opTimeout; unlock: the release timeout, 5 s) plus slack is a hang.
func (ld *load) finish(t *testing.T) {
	t.Helper()
	select {
	case <-ld.stop:
	default:
		close(ld.stop)
	}
	bound := ld.cfg.opTimeout + rlock.DefaultReleaseTimeout + ld.cfg.hold + ld.cfg.every + 5*time.Second
	select {
	case <-ld.done:
	case <-time.After(bound):
		t.Fatalf("load workers still running %v after stop: an operation hangs", bound)
	}
}

// waitSuccessesAfter waits until every worker has completed n acquire+unlock cycles that
// started at or after from, failing t after d.
func (ld *load) waitSuccessesAfter(t *testing.T, from time.Time, n int, d time.Duration) {
	t.Helper()
	if wait := time.Until(from); wait > 0 {
		time.Sleep(wait)
	}
	var counts map[int]int
	ok := waitFor(d, func() bool {
		counts = map[int]int{}
		for _, r := range ld.records() {
			if r.op == "unlock" && r.err == nil && !r.start.Before(from) {
				counts[r.worker]++
			}
		}
		for w := range ld.cfg.workers {
			if counts[w] < n {
				return false
			}
		}
		return true
	})
	if !ok {
		t.Errorf("after %s, workers did not all complete %d cycles within %v: %v (errors since: %v)",
			from.Format("15:04:05.000"), n, d, counts, ld.errorsBetween(from, time.Now()))
	}
}

// errorsBetween counts, by kind, the errors of operations that started in [from, to).
func (ld *load) errorsBetween(from, to time.Time) map[string]int {
	out := map[string]int{}
	for _, r := range ld.records() {
		if r.err != nil && !r.start.Before(from) && r.start.Before(to) {
			out[r.op+": "+errKind(r.err)]++
		}
	}
	return out
}

func total(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

// check asserts what must hold of a load around a fault window [faultAt, windowEnd): no
// overlap, no error before the fault, no error in operations started after windowEnd, no
// operation longer than its bound, and each worker's last operation ok. It returns a summary.
func (ld *load) check(t *testing.T, faultAt, windowEnd time.Time) string {
	t.Helper()
	ops := ld.records()
	ld.mu.Lock()
	violations := slices.Clone(ld.violations)
	ld.mu.Unlock()
	assert.Empty(t, violations, "overlapping holders")

	before, during, after := map[string]int{}, map[string]int{}, map[string]int{}
	var maxAcq, maxRel time.Duration
	last := map[int]opRecord{}
	okOps := 0
	var firstErr, lastErr time.Time
	for _, r := range ops {
		d := r.end.Sub(r.start)
		if r.op == "acquire" {
			maxAcq = max(maxAcq, d)
		} else {
			maxRel = max(maxRel, d)
		}
		if prev, ok := last[r.worker]; !ok || !r.start.Before(prev.start) {
			last[r.worker] = r
		}
		if r.err == nil {
			okOps++
			continue
		}
		if firstErr.IsZero() || r.end.Before(firstErr) {
			firstErr = r.end
		}
		if r.end.After(lastErr) {
			lastErr = r.end
		}
		k := r.op + ": " + errKind(r.err)
		switch {
		case r.end.Before(faultAt):
			before[k]++
		case r.start.Before(windowEnd):
			during[k]++
		default:
			after[k]++
		}
	}
	assert.Empty(t, before, "errors before the fault")
	assert.Empty(t, after, "errors in operations started after the failover window")
	assert.LessOrEqual(t, maxAcq, ld.cfg.opTimeout+time.Second, "longest acquire")
	assert.LessOrEqual(t, maxRel, rlock.DefaultReleaseTimeout+time.Second, "longest unlock")
	for w := range ld.cfg.workers {
		r, ok := last[w]
		if assert.True(t, ok, "worker %d did nothing", w) {
			assert.NoError(t, r.err, "worker %d's last operation (%s %s)", w, r.op, r.name)
		}
	}
	errSpan := "none"
	if !firstErr.IsZero() {
		errSpan = fmt.Sprintf("from +%v to +%v after the fault",
			firstErr.Sub(faultAt).Round(time.Millisecond), lastErr.Sub(faultAt).Round(time.Millisecond))
	}
	return fmt.Sprintf("%d ops (%d ok), errors in the window: %d %s (%s); longest acquire %v, longest unlock %v; overlaps %d",
		len(ops), okOps, total(during), sortedCounts(during), errSpan,
		maxAcq.Round(time.Millisecond), maxRel.Round(time.Millisecond), len(violations))
}

func sortedCounts(m map[string]int) string {
	keys := slices.Collect(maps.Keys(m))
	sort.Slice(keys, func(i, j int) bool { return m[keys[i]] > m[keys[j]] || m[keys[i]] == m[keys[j]] && keys[i] < keys[j] })
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%q=%d", k, m[k])
	}
	return "{" + strings.Join(parts, ", ") + "}"
}

// errKind names the kind of an operation error: an rlock sentinel, the context's, the
// first word of a Redis error (CLUSTERDOWN, READONLY, MOVED, NOSCRIPT, ...), or the gist of
// a connection error.
func errKind(err error) string {
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return "context deadline exceeded"
	case errors.Is(err, context.Canceled):
		return "context canceled"
	case errors.Is(err, rlock.ErrNotHeld):
		return "rlock.ErrNotHeld"
	case errors.Is(err, rlock.ErrLocked):
		return "rlock.ErrLocked"
	case errors.Is(err, rlock.ErrClosed):
		return "rlock.ErrClosed"
	}
	if re, ok := rueidis.IsRedisErr(err); ok {
		word, _, _ := strings.Cut(re.Error(), " ")
		return "redis " + word
	}
	msg := err.Error()
	for _, s := range []string{"connection refused", "connection reset", "broken pipe", "EOF", "i/o timeout", "closed"} {
		if strings.Contains(msg, s) {
			return s
		}
	}
	if len(msg) > 80 {
		msg = msg[:80]
	}
	return fmt.Sprintf("%T: %s", err, msg)
}
