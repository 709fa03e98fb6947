package integration

// Redis Cluster tests of rlock on a 6-node loopback cluster (redistest.StartCluster): RL-11
// and RL-17 (docs/SCENARIOS.md), the unlock handoff for each choice of pub/sub (on Redis 7,
// and on a cluster without sharded pub/sub), watchdog renewal across slots, and the fast
// forms of fault F11 (kill -9 of a master, CLUSTER FAILOVER under load, SCRIPT FLUSH). The failover harness they share with sentinel_test.go (F10) is in
// failover_test.go.

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/goredisson/goredisson/internal/redistest"
	"github.com/goredisson/goredisson/internal/redistest/rlocktest"
	"github.com/goredisson/goredisson/pubsub"
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
	var parts []string
	for _, addr := range slices.Sorted(maps.Keys(nodes)) {
		s, c := redistest.ShardNumSub(t, nodes[addr], ch), redistest.NumSub(t, nodes[addr], ch)
		sharded += s
		classic += c
		if s+c > 0 {
			parts = append(parts, fmt.Sprintf("%s: shard=%d classic=%d", addr, s, c))
		}
	}
	return sharded, classic, strings.Join(parts, "; ")
}

// waitFor polls cond every 20 ms until it returns true or d passes; it reports whether cond
// became true.
func waitFor(d time.Duration, cond func() bool) bool {
	return redistest.Poll(d, 20*time.Millisecond, cond)
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
		c := rlocktest.NewClient(t, rc, rlock.Options{})
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

			l := c.NewLock(name)
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
		c := rlocktest.NewClient(t, rc, rlock.Options{})
		ctx, cancel := within(context.Background(), 20*time.Second)
		defer cancel()
		l := c.NewLock("rl17:lock")
		octx := rlock.NewOwner(ctx)
		for i := range 30 {
			require.NoError(t, l.TryLock(octx, 0, 0), "TryLock %d", i)
			require.NoError(t, l.Unlock(octx), "Unlock %d", i)
		}
		locked, err := l.IsLocked(ctx)
		require.NoError(t, err)
		require.False(t, locked)
	})

	// The unlock handoff between two clients for each PubSub and JavaPubSub (handoffPlans).
	for _, p := range handoffPlans {
		t.Run(fmt.Sprintf("Handoff_%s_Java%s", modeName(p.mode), javaPubSubName(p.java)), func(t *testing.T) {
			redistest.Require(t, cl.Client(t), redistest.ShardedPubSub) // TestClusterWithoutShardedPubSub runs the plans without it
			testHandoff(t, cl, nodes, p)
		})
	}

	// Watchdog renewal across slots: locks with a 900 ms watchdog on names in several slots
	// (on at least two masters) stay held for 3 s, renewed every 300 ms.
	t.Run("Renewal_MultiSlot", func(t *testing.T) {
		const watchdog = 900 * time.Millisecond
		c := rlocktest.NewClient(t, rc, rlock.Options{WatchdogTimeout: watchdog})
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
			locks[i] = c.NewLock(n)
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
		c := rlocktest.NewClient(t, rc, rlock.Options{WatchdogTimeout: watchdog})
		ctx, cancel := within(context.Background(), 20*time.Second)
		defer cancel()
		octx := rlock.NewOwner(ctx)
		held := c.NewLock("flush:held")
		require.NoError(t, held.Lock(octx))
		hctx := rlocktest.Held(t, held, octx)
		var others []*rlock.Lock
		masters := map[string]bool{}
		for i := 0; len(masters) < 3; i++ {
			name := fmt.Sprintf("flush:%d", i)
			if m := cl.MasterOf(t, name); !masters[m] {
				masters[m] = true
				others = append(others, c.NewLock(name))
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
		// Two renewals after the flush: each one raises the held lock's PTTL.
		last, renewals := redistest.PTTL(t, rc, "flush:held"), 0
		renewed := waitFor(5*watchdog, func() bool {
			ttl := redistest.PTTL(t, rc, "flush:held")
			if ttl > last {
				renewals++
			}
			last = ttl
			return renewals >= 2
		})
		require.True(t, renewed, "held lock not renewed twice after SCRIPT FLUSH (%d renewals)", renewals)
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

// modeName and javaPubSubName name the pub/sub options in test names and logs.
func modeName(m rlock.PubSubMode) string {
	return map[rlock.PubSubMode]string{rlock.PubSubAuto: "Auto", rlock.PubSubSharded: "Sharded", rlock.PubSubClassic: "Classic"}[m]
}

func javaPubSubName(j rlock.JavaPubSub) string {
	return map[rlock.JavaPubSub]string{rlock.JavaPubSubUnknown: "Unknown", rlock.JavaPubSubAuto: "Auto",
		rlock.JavaPubSubClassic: "Classic", rlock.JavaPubSubNone: "None"}[j]
}

// handoffPlan is a Go client's pub/sub options and what its waiters must subscribe with and
// its releases publish with; listens zero: rlock.New must refuse the options.
type handoffPlan struct {
	mode               rlock.PubSubMode
	java               rlock.JavaPubSub
	listens, publishes pubsub.Kinds
}

const (
	classic = pubsub.Classic
	sharded = pubsub.Sharded
	both    = pubsub.Classic | pubsub.Sharded
)

// handoffPlans are the plans on a Redis 7 cluster: a client's waiters listen the ways its
// fellow Go clients and the Java services (JavaPubSub) may publish, and its releases publish
// the ways they may listen, and no other way.
var handoffPlans = []handoffPlan{
	{rlock.PubSubAuto, rlock.JavaPubSubUnknown, both, both},
	{rlock.PubSubAuto, rlock.JavaPubSubAuto, sharded, sharded},
	{rlock.PubSubAuto, rlock.JavaPubSubClassic, classic, classic},
	{rlock.PubSubAuto, rlock.JavaPubSubNone, sharded, sharded},
	{rlock.PubSubSharded, rlock.JavaPubSubUnknown, sharded, both},
	{rlock.PubSubSharded, rlock.JavaPubSubAuto, sharded, sharded},
	{rlock.PubSubSharded, rlock.JavaPubSubClassic, sharded, both},
	{rlock.PubSubSharded, rlock.JavaPubSubNone, sharded, sharded},
	{rlock.PubSubClassic, rlock.JavaPubSubUnknown, classic, both},
	{rlock.PubSubClassic, rlock.JavaPubSubAuto, classic, both},
	{rlock.PubSubClassic, rlock.JavaPubSubClassic, classic, classic},
	{rlock.PubSubClassic, rlock.JavaPubSubNone, classic, classic},
}

// testHandoff runs the unlock handoff between two Go clients with p's options: a waiter on
// client B, asleep subscribed with p.listens, is woken by client A's Unlock (which succeeds)
// long before the 30 s watchdog lease would have let it in; A's release publishes with
// p.publishes, counted on the slot's master, where the release script runs; and no
// subscription is left behind.
func testHandoff(t *testing.T, cl *redistest.Cluster, nodes map[string]rueidis.Client, p handoffPlan) {
	ctx, cancel := within(context.Background(), 25*time.Second)
	defer cancel()
	opts := rlock.Options{PubSub: p.mode, JavaPubSub: p.java}
	if p.listens == 0 {
		_, err := rlock.New(ctx, cl.Client(t), opts)
		require.ErrorIs(t, err, pubsub.ErrUnsupported)
		t.Logf("mode %s, Java %s: %v", modeName(p.mode), javaPubSubName(p.java), err)
		return
	}
	name := fmt.Sprintf("handoff:%s:%s", modeName(p.mode), javaPubSubName(p.java))
	a, b := rlocktest.NewClient(t, cl.Client(t), opts), rlocktest.NewClient(t, cl.Client(t), opts)
	la, lb := a.NewLock(name), b.NewLock(name)
	ctxA, ctxB := rlock.NewOwner(ctx), rlock.NewOwner(ctx)
	master, ch := cl.MasterOf(t, name), lockChannelOf(name)
	mc := nodes[master]

	require.NoError(t, la.Lock(ctxA))
	type result struct {
		err error
		at  time.Time
	}
	got := make(chan result, 1)
	base, err := pttlCalls(ctx, mc)
	require.NoError(t, err)
	go func() {
		wctx, wcancel := within(ctxB, 10*time.Second)
		defer wcancel()
		err := lb.Lock(wctx)
		got <- result{err, time.Now()}
	}()

	// Asleep once it has tried, subscribed and tried again; sharded subscriptions are on the
	// slot's master, classic ones on whichever node the cluster client picked.
	require.True(t, waitFor(5*time.Second, func() bool {
		n, err := pttlCalls(ctx, mc)
		require.NoError(t, err)
		return n >= base+2
	}), "the waiter never tried twice")
	s, c, where := subCounts(t, nodes, ch)
	ms, _, _ := subCounts(t, map[string]rueidis.Client{master: mc}, ch)
	requireListening(t, subs{sharded: s, classic: c, onMaster: ms, where: where}, name, "waiter", p.listens)
	select {
	case r := <-got:
		t.Fatalf("waiter returned %v while A holds the lock", r.err)
	default:
	}

	sp0, p0 := publishCalls(t, ctx, mc)
	unlockAt := time.Now()
	require.NoError(t, la.Unlock(ctxA))
	sp1, p1 := publishCalls(t, ctx, mc)
	var r result
	select {
	case r = <-got:
	case <-time.After(15 * time.Second):
		t.Fatal("waiter still blocked 15 s after the unlock")
	}
	require.NoError(t, r.err, "waiter's Lock")
	latency := r.at.Sub(unlockAt)
	t.Logf("mode %s, Java %s: waiter subscribed %s (slot master %s); release: %d SPUBLISH, %d PUBLISH; handoff latency %v (watchdog lease 30 s)",
		modeName(p.mode), javaPubSubName(p.java), where, master, sp1-sp0, p1-p0, latency)
	assert.Equal(t, once(p.publishes, sharded), sp1-sp0, "the release's SPUBLISH calls")
	assert.Equal(t, once(p.publishes, classic), p1-p0, "the release's PUBLISH calls")
	assert.Less(t, latency, 2*time.Second, "waiter woke %v after the unlock", latency)

	// The waiter's subscriptions end once it has the lock.
	if !waitFor(5*time.Second, func() bool {
		s, c, where = subCounts(t, nodes, ch)
		return s+c == 0
	}) {
		t.Errorf("subscriptions to %s left after the waiter returned: %s", ch, where)
	}
	require.NoError(t, lb.Unlock(ctxB))
}

// once returns 1 when kinds has k, else 0: how many subscriptions or publishes of kind k
// one waiter or one release makes.
func once(kinds, k pubsub.Kinds) int64 {
	if kinds.Has(k) {
		return 1
	}
	return 0
}

// publishCalls returns the SPUBLISH and PUBLISH calls on nc (INFO commandstats, calls by
// scripts included).
func publishCalls(t *testing.T, ctx context.Context, nc rueidis.Client) (spublish, publish int64) {
	t.Helper()
	spublish, err := redistest.CommandCalls(ctx, nc, "spublish")
	require.NoError(t, err)
	publish, err = redistest.CommandCalls(ctx, nc, "publish")
	require.NoError(t, err)
	return spublish, publish
}

// TestClusterWithoutShardedPubSub runs the unlock handoff on a cluster whose servers lack the
// sharded pub/sub commands (a Redis 6.2 cluster, or SPUBLISH, SSUBSCRIBE and SUNSUBSCRIBE
// renamed away on later lines): rlock subscribes and publishes with classic pub/sub only, whatever the Java
// services are said to use, Unlock succeeds and wakes the waiter, and PubSubSharded is
// refused by New.
func TestClusterWithoutShardedPubSub(t *testing.T) {
	cl := redistest.StartCluster(t, redistest.WithoutShardedPubSub())
	nodes := map[string]rueidis.Client{}
	for _, addr := range cl.Addrs() {
		nodes[addr] = cl.NodeClient(t, addr)
	}
	for _, p := range []handoffPlan{
		{rlock.PubSubAuto, rlock.JavaPubSubUnknown, classic, classic},
		{rlock.PubSubAuto, rlock.JavaPubSubAuto, classic, classic}, // Redisson's AUTO falls back to classic
		{rlock.PubSubAuto, rlock.JavaPubSubNone, classic, classic},
		{rlock.PubSubClassic, rlock.JavaPubSubUnknown, classic, classic},
		{rlock.PubSubSharded, rlock.JavaPubSubUnknown, 0, 0},
	} {
		t.Run(fmt.Sprintf("Handoff_%s_Java%s", modeName(p.mode), javaPubSubName(p.java)), func(t *testing.T) {
			testHandoff(t, cl, nodes, p)
		})
	}
}

// f11Watchdog is the watchdog of the fast F11 tests' load.
const f11Watchdog = 3 * time.Second

// f11Run is the set-up of a fast F11 test: a cluster; a master (target), its replica, and
// names it serves; a holder of the handoff name with a waiter blocked on its sharded
// subscription there; and the load (f11Load) on the names, running.
type f11Run struct {
	cl              *redistest.Cluster
	ctx             context.Context
	target, replica string
	names           []string
	h               *failoverHandoff
	ld              *load
}

// startF11 starts an F11 run whose names begin with prefix: the handoff's holder has lease,
// and the load's acquires may wait for stalled connections when stalls (loadConfig.stalls).
// before runs once the names are chosen, before the handoff and the load start.
func startF11(t *testing.T, prefix string, lease time.Duration, stalls bool, before func(r *f11Run), clientOpts ...func(*rueidis.ClientOption)) *f11Run {
	r := &f11Run{cl: redistest.StartCluster(t)}
	var cancel context.CancelFunc
	r.ctx, cancel = within(context.Background(), 90*time.Second)
	t.Cleanup(cancel)
	a := rlocktest.NewClient(t, r.cl.Client(t, clientOpts...), rlock.Options{WatchdogTimeout: f11Watchdog})
	b := rlocktest.NewClient(t, r.cl.Client(t, clientOpts...), rlock.Options{WatchdogTimeout: f11Watchdog})
	r.target = r.cl.MasterOf(t, prefix+"lock:0")
	r.replica = r.cl.ReplicaOf(t, r.target)
	r.names = namesOn(t, r.cl, r.target, prefix+"lock:", 3)
	handoff := namesOn(t, r.cl, r.target, prefix+"handoff:", 1)[0]
	t.Logf("master %s (replica %s) serves %v and %s", r.target, r.replica, r.names, handoff)
	if before != nil {
		before(r)
	}
	r.h = startFailoverHandoff(t, r.ctx, a, b, handoff, lease)
	require.True(t, r.waiterOn(t, r.target, 5*time.Second), "waiter not subscribed on %s", r.target)
	cfg := f11Load(r.names, a, b)
	cfg.stalls = stalls
	r.ld = startLoad(t, cfg)
	r.ld.waitSuccessesAfter(t, time.Now(), 20, 10*time.Second)
	return r
}

// waiterOn reports whether the handoff's waiter is subscribed on node addr within d.
func (r *f11Run) waiterOn(t *testing.T, addr string, d time.Duration) bool {
	node := r.cl.NodeClient(t, addr)
	ch := lockChannelOf(r.h.hl.Name())
	return waitFor(d, func() bool {
		s, _, _ := subCounts(t, map[string]rueidis.Client{addr: node}, ch)
		return s == 1
	})
}

// failedOver waits for the replica to serve the target's slots, and returns when it did.
func (r *f11Run) failedOver(t *testing.T, fault string, faultAt time.Time) time.Time {
	promoted := r.cl.MasterOf(t, r.names[0])
	at := time.Now()
	require.Equal(t, r.replica, promoted, "slot master after the fault")
	t.Logf("%s %s: %s serves the slots %v later", fault, r.target, promoted, at.Sub(faultAt).Round(time.Millisecond))
	return at
}

// finish checks that the waiter is subscribed again on the new master within d and that
// the holder's unlock wakes it, then that the load succeeds after windowEnd, and checks it.
func (r *f11Run) finish(t *testing.T, fault string, faultAt, windowEnd time.Time, d time.Duration) {
	resub := r.waiterOn(t, r.replica, d)
	t.Logf("waiter resubscribed on %s: %v (%v after the fault)", r.replica, resub, time.Since(faultAt).Round(time.Millisecond))
	assert.True(t, resub, "waiter's sharded subscription not restored on the new master")
	r.h.release(t)
	r.ld.waitSuccessesAfter(t, windowEnd, 3, 20*time.Second)
	r.ld.finish(t)
	t.Logf("F11 %s: %s", fault, r.ld.check(t, faultAt, windowEnd))
}

// TestClusterF11KillMaster is the fast form of F11 with kill -9: while 4 goroutines on two
// clients lock and unlock names served by one master, that master is SIGKILLed and its
// replica takes over. No operation may hang, errors are allowed only in the failover window,
// and the loops succeed again after it. Alongside: a waiter blocked on a sharded
// subscription during the failover is woken on the new master, and a watchdog lock on
// another master stays held.
func TestClusterF11KillMaster(t *testing.T) {
	var ol, victim *rlock.Lock
	var otherOwner, otherHeld context.Context
	r := startF11(t, "f11:", 20*time.Second, false, func(r *f11Run) {
		var other string
		for i := 0; other == ""; i++ {
			if n := fmt.Sprintf("f11:other:%d", i); r.cl.MasterOf(t, n) != r.target {
				other = n
			}
		}
		// Watchdog holds on a client with a 10 s watchdog (longer than the failover): one
		// on another master, which must stay held across the failover, and one on the
		// master that dies, so that this client's renewal rounds also carry calls to the
		// dead node.
		wd := rlocktest.NewClient(t, r.cl.Client(t), rlock.Options{WatchdogTimeout: 10 * time.Second})
		otherOwner = rlock.NewOwner(r.ctx)
		ol = wd.NewLock(other)
		require.NoError(t, ol.Lock(otherOwner))
		otherHeld = rlocktest.Held(t, ol, otherOwner)
		victim = wd.NewLock(namesOn(t, r.cl, r.target, "f11:victim:", 1)[0])
		require.NoError(t, victim.Lock(otherOwner))
	})

	killAt := time.Now()
	r.cl.Kill(t, r.target)
	recoveredAt := r.failedOver(t, "kill -9", killAt)
	// Errors are tolerated for operations started before the cluster recovered, plus one
	// watchdog lease: a hold whose release the replica never received (or whose acquire
	// reply was lost) lives on the new master until its lease runs out.
	r.finish(t, "kill -9", killAt, recoveredAt.Add(f11Watchdog+time.Second), 10*time.Second)

	// The hold on the other master was renewed throughout; the one on the dead master
	// survived too if the replica had it, which it almost always has.
	assert.NoError(t, context.Cause(otherHeld), "watchdog hold on an unaffected master")
	ok, err := ol.IsHeld(otherOwner)
	assert.NoError(t, err)
	assert.True(t, ok, "watchdog hold on an unaffected master lost across the failover")
	assert.NoError(t, ol.Unlock(otherOwner))
	t.Logf("watchdog hold on the killed master's slot after the failover: Unlock = %v", victim.Unlock(otherOwner))
}

// TestClusterF11PausedMaster is F11 with a master that hangs rather than dies (SIGSTOP: its
// connections stay open and nothing answers), with the same load and waiter. Its replica
// takes over; no operation may hang (an acquire in flight may wait up to the release
// timeout past its ctx, rlock's documented bound), errors are allowed only until the
// clients give the stopped node's connections up, and the waiter is subscribed again on
// the new master, where the holder's unlock wakes it.
func TestClusterF11PausedMaster(t *testing.T) {
	r := startF11(t, "f11p:", 30*time.Second, true, nil)
	pausedAt := time.Now()
	r.cl.Pause(t, r.target)
	r.failedOver(t, "SIGSTOP", pausedAt)
	// A request on the stopped node's connection waits until rueidis gives it up (its
	// ConnWriteTimeout, 10 s), and a hold taken just before the pause lives its lease.
	r.finish(t, "SIGSTOP", pausedAt, pausedAt.Add(10*time.Second+f11Watchdog+2*time.Second), 20*time.Second)
}

// TestClusterF11PausedMasterRefreshing is TestClusterF11PausedMaster with lock clients whose
// rueidis reads the cluster's topology every second (ClusterOption.ShardsRefreshInterval).
// Once a read has dropped the stopped master, the clients send its slots' commands to the
// new master, and the waiter's sharded subscription moves there too, without waiting for
// rueidis to give the stopped node's connection up (ConnWriteTimeout, 10 s).
func TestClusterF11PausedMasterRefreshing(t *testing.T) {
	refresh := func(o *rueidis.ClientOption) { o.ClusterOption.ShardsRefreshInterval = time.Second }
	r := startF11(t, "f11r:", 30*time.Second, true, nil, refresh)
	pausedAt := time.Now()
	r.cl.Pause(t, r.target)
	r.failedOver(t, "SIGSTOP", pausedAt)
	// Two topology reads, the line's check (every 500 ms) and a slot map read that may ask
	// the stopped node first (1 s): 6 s from the failover, against 9 s and more when the
	// line waits for rueidis to give the connection up.
	r.finish(t, "SIGSTOP, topology read every second", pausedAt, pausedAt.Add(10*time.Second+f11Watchdog+2*time.Second), 6*time.Second)
}

// f11Load is the load of the fast F11 tests: 4 workers on clients a and b take names with
// the watchdog (5 s to acquire), hold for 2 ms and pause 10 ms.
func f11Load(names []string, a, b *rlock.Client) loadConfig {
	return loadConfig{
		workers:   4,
		names:     names,
		clients:   []*rlock.Client{a, b},
		acquire:   func(ctx context.Context, l *rlock.Lock) error { return l.Lock(ctx) },
		opTimeout: 5 * time.Second,
		hold:      2 * time.Millisecond,
		every:     10 * time.Millisecond,
	}
}

// TestClusterF11ManualFailover is the fast form of F11 with CLUSTER FAILOVER: the same load,
// then a graceful failover to the replica and, after it, a forced one back. It logs the
// errors each causes; graceful failover is expected to cause none.
func TestClusterF11ManualFailover(t *testing.T) {
	const watchdog = 3 * time.Second
	cl := redistest.StartCluster(t)
	a := rlocktest.NewClient(t, cl.Client(t), rlock.Options{WatchdogTimeout: watchdog})
	b := rlocktest.NewClient(t, cl.Client(t), rlock.Options{WatchdogTimeout: watchdog})
	target := cl.MasterOf(t, "f11m:lock:0")
	replica := cl.ReplicaOf(t, target)
	names := namesOn(t, cl, target, "f11m:lock:", 3)

	ld := startLoad(t, f11Load(names, a, b))
	ld.waitSuccessesAfter(t, time.Now(), 20, 10*time.Second)

	gracefulAt := time.Now()
	cl.Failover(t, replica, false)
	gracefulDone := time.Now()
	require.Equal(t, replica, cl.MasterOf(t, names[0]))
	t.Logf("CLUSTER FAILOVER to %s took %v", replica, gracefulDone.Sub(gracefulAt).Round(time.Millisecond))
	ld.waitSuccessesAfter(t, gracefulDone, 20, 15*time.Second)

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
