package integration

// The Go ↔ Java Redisson interop matrix (interop_test.go, mutex_test.go) on a Redis Cluster:
// 3 masters and 3 replicas on loopback (redistest.StartCluster, Redis 7), with the Java peer
// in cluster mode, once for each of Redisson's shardedSubscriptionMode values:
//
//   - AUTO (Redisson's default) and ON: on Redis 7, SSUBSCRIBE for Java's waiters and SPUBLISH
//     (only) for its releases;
//   - OFF: SUBSCRIBE for Java's waiters and PUBLISH (only) for its releases, as a Redisson
//     configured for a single server and pointed at a cluster node would do.
//
// The Go side runs with rlock.Options{} (PubSubAuto, JavaPubSubUnknown): its waiters
// subscribe both ways (SSUBSCRIBE and SUBSCRIBE) and its releases are published both ways,
// so that it hears and wakes Java whatever its mode. Every scenario runs on two lock names
// served by different masters: a plain name (its channel wraps it in braces) and a name with
// its own hash tag. Then a second Go client, told Java's mode (rlock.JavaPubSub), subscribes
// and publishes one kind only, and the handoffs still wake both ways.
//
// The last subtest forces the Go client to rlock.PubSubClassic while Java stays AUTO, to
// document why PubSubAuto is the default: the Go waiter does not hear Java's SPUBLISH and
// falls back to sleeping out the holder's TTL.

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/goredisson/goredisson/integration/javapeer"
	"github.com/goredisson/goredisson/internal/keys"
	"github.com/goredisson/goredisson/internal/redistest"
	"github.com/goredisson/goredisson/internal/redistest/rlocktest"
	"github.com/goredisson/goredisson/pubsub"
	"github.com/goredisson/goredisson/rlock"
)

// TestClusterInterop runs the cluster interop matrix once per Redisson version and Java
// shardedSubscriptionMode, on one cluster shared by all of them (each env uses names of its
// own).
func TestClusterInterop(t *testing.T) {
	begin := time.Now()
	cl := redistest.StartCluster(t)
	nodes := map[string]rueidis.Client{}
	for _, addr := range cl.Addrs() {
		nodes[addr] = cl.NodeClient(t, addr)
	}
	sum := &summary{}
	forEachVersion(t, func(t *testing.T, v string) {
		vbegin := time.Now()
		for _, jm := range javaModes {
			t.Run("Java"+jm.name, func(t *testing.T) {
				if jm.name != "AUTO" {
					javapeer.Need(t, v, javapeer.ShardedSubscriptionMode)
				}
				c := newClusterEnv(t, cl, nodes, v, jm.name, rlock.Options{}, pubsub.Classic|pubsub.Sharded, sum)
				t.Run("MutualExclusion", c.testMutualExclusion)
				t.Run("UnlockWakesWaiter", func(t *testing.T) {
					javapeer.Avoid(t, v, javapeer.ShardingDetection) // asserts which kind Java subscribes with
					c.testUnlockWakesWaiter(t)
				})
				t.Run("ForceUnlockWakesWaiter", func(t *testing.T) {
					javapeer.Avoid(t, v, javapeer.ShardingDetection)
					c.testForceUnlockWakesWaiter(t)
				})
				t.Run("ReentrancyPerOwner", c.testReentrancyPerOwner)
				t.Run("Fair", c.testFair)
				t.Run("GoTold", func(t *testing.T) {
					javapeer.Avoid(t, v, javapeer.ShardingDetection)
					mode, listens := jm.told, jm.listens
					if !javapeer.Has(v, javapeer.ShardedPubSub) {
						mode, listens = rlock.JavaPubSubClassic, pubsub.Classic
					}
					told := c.withGo(t, rlock.Options{JavaPubSub: mode}, listens, c.label+"told")
					told.testUnlockWakesWaiter(t)
				})
			})
		}
		t.Run("GoClassicJavaAuto", func(t *testing.T) { testClusterClassicVsAuto(t, cl, nodes, v, sum) })
		sum.add("Redisson %s: %v in all", v, time.Since(vbegin).Round(time.Millisecond))
	})
	t.Logf("cluster interop summary (%v in all):\n%s", time.Since(begin).Round(time.Millisecond), sum)
}

// javaModes are Redisson's shardedSubscriptionMode values (since Redisson 3.29.0), with the
// kinds of pub/sub a Java peer in that mode subscribes and publishes with on Redis 7, and the
// rlock.JavaPubSub that tells a Go client so. An older Redisson runs as AUTO does (3.22.0+)
// or classic only (before 3.22.0), without the setting.
var javaModes = []struct {
	name    string
	listens pubsub.Kinds
	told    rlock.JavaPubSub
}{
	{"AUTO", pubsub.Sharded, rlock.JavaPubSubAuto},
	{"ON", pubsub.Sharded, rlock.JavaPubSubAuto},
	{"OFF", pubsub.Classic, rlock.JavaPubSubClassic},
}

// javaListens returns the kinds of pub/sub a Java peer of Redisson version in
// shardedSubscriptionMode mode subscribes with on Redis 7.
func javaListens(version, mode string) pubsub.Kinds {
	if !javapeer.Has(version, javapeer.ShardedPubSub) {
		return pubsub.Classic
	}
	for _, jm := range javaModes {
		if jm.name == mode {
			return jm.listens
		}
	}
	panic("unknown shardedSubscriptionMode " + mode)
}

// summary collects one line per measurement, for the log at the end of the test.
type summary struct {
	mu    sync.Mutex
	lines []string
}

func (s *summary) add(format string, args ...any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lines = append(s.lines, "  "+fmt.Sprintf(format, args...))
}

func (s *summary) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return strings.Join(s.lines, "\n")
}

// clusterEnv is the cluster form of env: one Java peer in cluster mode and one Go rlock
// client on the shared cluster. Its env method gives each subtest an env (the one of
// env_test.go, whose goSide, javaSide, hgetall and pttl work unchanged on a cluster client)
// bound to that subtest's t; the single-server helpers of env (awaitWaiting, failedTries)
// are replaced by the cluster ones below.
type clusterEnv struct {
	cl       *redistest.Cluster
	nodes    map[string]rueidis.Client // one client per node, for node-local PUBSUB and INFO
	version  string
	javaMode string        // the peer's shardedSubscriptionMode
	watchdog time.Duration // both sides' lock watchdog timeout; zero: 30 s
	label    string        // the part of this env's lock names that no other env on the cluster has
	ctx      context.Context
	rc       rueidis.Client // raw cluster observer, never used to take locks
	peer     *javapeer.Peer
	javaID   string
	goc      *rlock.Client
	listens  map[string]pubsub.Kinds // side ("go", "java") → the kinds its waiters subscribe with
	sum      *summary

	mu      sync.Mutex
	masters map[string]string // lock name → master of its slot
}

// newClusterEnv starts a Java peer in cluster mode with shardedSubscriptionMode javaMode and
// a Go client with goOpts, whose waiters subscribe with goListens. Both sides use the
// watchdog of goOpts (zero: 30 s).
func newClusterEnv(t *testing.T, cl *redistest.Cluster, nodes map[string]rueidis.Client, version, javaMode string,
	goOpts rlock.Options, goListens pubsub.Kinds, sum *summary) *clusterEnv {
	t.Helper()
	jar := javapeer.JarPath(t, version)
	var uris []string
	for _, addr := range cl.Addrs() {
		uris = append(uris, "redis://"+addr)
	}
	opts := []javapeer.Option{javapeer.WithCluster(uris...)}
	if javapeer.Has(version, javapeer.ShardedSubscriptionMode) {
		opts = append(opts, javapeer.WithShardedSubscriptionMode(javaMode))
	} else if javaMode != "AUTO" {
		javapeer.Need(t, version, javapeer.ShardedSubscriptionMode)
	}
	if goOpts.WatchdogTimeout > 0 {
		opts = append(opts, javapeer.WithWatchdog(goOpts.WatchdogTimeout))
	}
	peer := javapeer.Start(t, jar, "", opts...)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	t.Cleanup(cancel)
	c := &clusterEnv{
		cl: cl, nodes: nodes, version: version, javaMode: javaMode, watchdog: goOpts.WatchdogTimeout,
		ctx: ctx, rc: cl.Client(t), peer: peer, sum: sum, label: version + strings.ToLower(javaMode),
	}
	var err error
	c.javaID, err = peer.ClientID(ctx)
	require.NoError(t, err)
	t.Logf("Redisson %s in cluster mode, shardedSubscriptionMode %s (JVM ready in %v)",
		peer.Must(t, ctx, "", "version"), javaMode, peer.StartupTime().Round(time.Millisecond))
	return c.withGo(t, goOpts, goListens, c.label)
}

// withGo returns an env on the same Java peer with a new Go client with goOpts (with the
// watchdog of c), whose waiters subscribe with goListens, and lock names labelled label.
func (c *clusterEnv) withGo(t *testing.T, goOpts rlock.Options, goListens pubsub.Kinds, label string) *clusterEnv {
	t.Helper()
	goOpts.WatchdogTimeout = c.watchdog
	n := &clusterEnv{
		cl: c.cl, nodes: c.nodes, version: c.version, javaMode: c.javaMode, watchdog: c.watchdog, label: label,
		ctx: c.ctx, rc: c.rc, peer: c.peer, javaID: c.javaID, sum: c.sum,
		goc:     rlocktest.NewClient(t, c.cl.Client(t), goOpts),
		listens: map[string]pubsub.Kinds{"go": goListens, "java": javaListens(c.version, c.javaMode)},
		masters: map[string]string{},
	}
	t.Logf("Go pub/sub %s, told Java %s: Go waiters listen %s, Java waiters %s; watchdog %v",
		modeName(goOpts.PubSub), javaPubSubName(goOpts.JavaPubSub), goListens, n.listens["java"], watchdogOrDefault(goOpts.WatchdogTimeout))
	return n
}

// env returns an env for subtest t on this cluster env's peer and Go client.
func (c *clusterEnv) env(t *testing.T) *env {
	return &env{t: t, ctx: c.ctx, rc: c.rc, peer: c.peer, javaID: c.javaID, goc: c.goc, tids: map[string]string{}}
}

// master returns the address of the master that serves name's slot.
func (c *clusterEnv) master(t *testing.T, name string) string {
	t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	m, ok := c.masters[name]
	if !ok {
		m = c.cl.MasterOf(t, name)
		c.masters[name] = m
	}
	return m
}

// names returns the two lock names of a scenario: a plain one and one with its own hash tag,
// in different slots served by different masters.
func (c *clusterEnv) names(t *testing.T, scenario string) []string {
	t.Helper()
	plain := fmt.Sprintf("cinterop%s:%s", c.label, scenario)
	pm := c.master(t, plain)
	for i := 0; ; i++ {
		require.Less(t, i, 100, "no hash-tagged name for %s off master %s", scenario, pm)
		tagged := fmt.Sprintf("{cinterop%s:%s:%d}:lock", c.label, scenario, i)
		if tm := c.master(t, tagged); tm != pm {
			t.Logf("names: %q slot %d on %s, %q slot %d on %s", plain, keys.Slot(plain), pm, tagged, keys.Slot(tagged), tm)
			return []string{plain, tagged}
		}
	}
}

// failedTries is env.failedTries on the master of name's slot, where both sides' acquire
// scripts run: the PTTL calls in its INFO commandstats.
func (c *clusterEnv) failedTries(t *testing.T, name string) int64 {
	t.Helper()
	n, err := pttlCalls(c.ctx, c.nodes[c.master(t, name)])
	require.NoError(t, err)
	return n
}

// awaitUnsubscribed waits until no client, on any node, is subscribed to name's channel in
// either kind, so that the counts awaitWaiting reads are the next waiter's alone (a previous
// waiter's unsubscribe may still be on its way).
func (c *clusterEnv) awaitUnsubscribed(t *testing.T, name string) {
	t.Helper()
	var where string
	require.True(t, waitFor(5*time.Second, func() bool {
		s, cls, w := subCounts(t, c.nodes, lockChannelOf(name))
		where = w
		return s+cls == 0
	}), "subscriptions to %s left over: %s", lockChannelOf(name), where)
}

// subs are the subscriptions to a lock's channel seen while one waiter sleeps on it.
type subs struct {
	sharded, classic int64 // summed over all nodes
	onMaster         int64 // sharded ones on the master of the lock's slot
	where            string
}

// awaitWaiting is env.awaitWaiting on a cluster: it waits until the waiter that started after
// failedTries returned base is asleep on lock name, subscribed (sharded or classic, on any
// node) and past the acquire attempt it makes after subscribing, and returns the
// subscriptions it saw.
func (c *clusterEnv) awaitWaiting(t *testing.T, name string, base int64) subs {
	t.Helper()
	master := c.master(t, name)
	ch := lockChannelOf(name)
	var s subs
	var tries int64
	ok := waitFor(10*time.Second, func() bool {
		// The tries first: every subscription of the waiter is confirmed before its second.
		var err error
		tries, err = pttlCalls(c.ctx, c.nodes[master])
		require.NoError(t, err)
		s.sharded, s.classic, s.where = subCounts(t, c.nodes, ch)
		return s.sharded+s.classic >= 1 && tries >= base+2
	})
	require.True(t, ok, "waiter on %s not asleep after 10s: subscriptions %q, %d failed tries since it started",
		name, s.where, tries-base)
	s.onMaster, _, _ = subCounts(t, map[string]rueidis.Client{master: c.nodes[master]}, ch)
	return s
}

// requireListening asserts that the one waiter asleep on name is subscribed with the kinds
// in want, once each: SSUBSCRIBE on the master of the lock's slot, SUBSCRIBE on any node.
func requireListening(t *testing.T, s subs, name, what string, want pubsub.Kinds) {
	t.Helper()
	sharded, classic := once(want, pubsub.Sharded), once(want, pubsub.Classic)
	assert.Equal(t, sharded, s.sharded, "%s: sharded subscriptions to %s (%s)", what, lockChannelOf(name), s.where)
	assert.Equal(t, sharded, s.onMaster, "%s: sharded subscriptions on the slot's master (%s)", what, s.where)
	assert.Equal(t, classic, s.classic, "%s: classic subscriptions to %s (%s)", what, lockChannelOf(name), s.where)
}

// testMutualExclusion is interop scenario 1 on the cluster: on each of the two names, in
// turn, 4 Go owners and 4 Java owners increment a counter non-atomically (GET, then SET)
// inside the lock, 50 rounds each (runMutualExclusion). The final count must be exact, the
// overlap detector of mutex_test.go must see no overlap, and no acquire may take 10 s. The
// counter shares the lock's slot (the tagged name's hash tag, or braces around the plain
// name), though plain GET/SET need not.
func (c *clusterEnv) testMutualExclusion(t *testing.T) {
	e := c.env(t)
	const goOwners, javaOwners, rounds = 4, 4, 50
	for _, name := range c.names(t, "mutex") {
		counter := keys.Tagged(name) + ":counter" // Tagged keeps a name that has its own tag
		require.Equal(t, keys.Slot(name), keys.Slot(counter))
		d := &overlapDetector{e: e, rc: e.rc, name: name, marker: "inside:" + keys.Tagged(name)}
		r := runMutualExclusion(t, d, counter, "M", goOwners, javaOwners, rounds)
		goMax, javaMax := r.maxWait[0], r.maxWait[1]
		// A lost wake-up would leave a waiter asleep for the holder's TTL, up to 30 s.
		assert.Less(t, goMax, 10*time.Second, "%s: longest Go acquire", name)
		assert.Less(t, javaMax, 10*time.Second, "%s: longest Java acquire", name)
		line := fmt.Sprintf("mutual exclusion on %q (%s): %d critical sections (%d Go, %d Java) in %v, counter %d, overlaps %d, longest acquire Go %v, Java %v",
			name, c.master(t, name), r.sections[0]+r.sections[1], r.sections[0], r.sections[1],
			r.elapsed.Round(time.Millisecond), r.counter, d.violations.Load(), goMax.Round(time.Millisecond), javaMax.Round(time.Millisecond))
		t.Log(line)
		c.sum.add("%s: %s", c.desc(), line)
	}
}

// startAsleep starts waiter on lock name, which another side holds, once no earlier
// subscription to its channel is left, and returns once the waiter is asleep on it, with the
// subscriptions it has (awaitWaiting).
func (c *clusterEnv) startAsleep(t *testing.T, waiter side, name string) (<-chan acquired, subs) {
	t.Helper()
	c.awaitUnsubscribed(t, name)
	base := c.failedTries(t, name)
	got := waiter.Start()
	return got, c.awaitWaiting(t, name, base)
}

// stage is the stage of the shared scenarios (scenarios_test.go) on this cluster for subtest
// t: every waiter must be asleep subscribed with the kinds its side listens with, and the
// measurements go to the summary.
func (c *clusterEnv) stage(t *testing.T) stage {
	return stage{e: c.env(t), version: c.version,
		startAsleep: func(t *testing.T, waiter side, name, what string) (<-chan acquired, string) {
			got, s := c.startAsleep(t, waiter, name)
			requireListening(t, s, name, what, c.listens[waiter.String()])
			return got, ", waiter subscribed " + s.where
		},
		record: func(format string, args ...any) {
			c.sum.add("%s: %s", c.desc(), fmt.Sprintf(format, args...))
		},
	}
}

// desc describes the env in the summary.
func (c *clusterEnv) desc() string {
	return fmt.Sprintf("Redisson %s, Java %s, Go listens %s", c.version, c.javaMode, c.listens["go"])
}

// testUnlockWakesWaiter is interop scenario 2 on the cluster: a Go waiter is woken by a Java
// unlock, and a Java waiter by a Go unlock, long before the holder's 30 s watchdog TTL, each
// waiter asleep on the subscriptions of its side.
func (c *clusterEnv) testUnlockWakesWaiter(t *testing.T) {
	onClusterNames(t, c, "handoff", crossSides, stage.unlockWakesWaiter)
}

// testForceUnlockWakesWaiter is interop scenario 3 on the cluster: a force-unlock from either
// side wakes the other side's waiter, whichever side held the lock; the evicted holder's
// unlock then fails and leaves the new holder alone.
func (c *clusterEnv) testForceUnlockWakesWaiter(t *testing.T) {
	onClusterNames(t, c, "force", forceCases, stage.forceUnlockWakesWaiter)
}

// testReentrancyPerOwner is interop scenario 4 on the cluster: while one side's owner holds
// the lock twice, the other side cannot take it until both holds are released, and the
// other side's unlock fails (Java: IllegalMonitorStateException, Go: rlock.ErrNotHeld)
// without changing the lock.
func (c *clusterEnv) testReentrancyPerOwner(t *testing.T) {
	onClusterNames(t, c, "reentrant", crossSides, stage.reentrancyPerOwner)
}

// testClusterClassicVsAuto documents what happens when the Go client is forced to
// rlock.PubSubClassic while Redisson stays on its default AUTO (sharded on Redis 7), with a
// 2 s watchdog on both sides so that the fallback is short:
//
//   - Go waiter, Java holder: the Go waiter subscribes with SUBSCRIBE only; Redisson's unlock
//     publishes with SPUBLISH only, which classic subscribers never receive. The Go waiter
//     sleeps out the TTL it read before sleeping (at most the 2 s watchdog lease) and only
//     then retries and takes the free lock.
//   - Java waiter, Go holder: the Java waiter subscribes with SSUBSCRIBE; the Go client,
//     not told how Java subscribes (JavaPubSubUnknown), publishes its release with both
//     PUBLISH and SPUBLISH, and the Java waiter is woken at once.
//
// With the default 30 s watchdog the first handoff would stall up to 30 s. PubSubAuto avoids
// it: its waiters subscribe the ways Java may publish.
func testClusterClassicVsAuto(t *testing.T, cl *redistest.Cluster, nodes map[string]rueidis.Client, v string, sum *summary) {
	javapeer.Need(t, v, javapeer.ShardedPubSub)
	javapeer.Avoid(t, v, javapeer.ShardingDetection)
	const watchdog = 2 * time.Second
	c := newClusterEnv(t, cl, nodes, v, "AUTO", rlock.Options{WatchdogTimeout: watchdog, PubSub: rlock.PubSubClassic}, pubsub.Classic, sum)
	e := c.env(t)
	names := c.names(t, "classic")
	for i, p := range crossSides {
		name := names[i] // java→go on the plain name, go→java on the tagged one
		holder, waiter := p.holder(e, name), p.waiter(e, name)
		what := fmt.Sprintf("%s→%s on %q, Go classic, Java AUTO", holder, waiter, name)
		holder.Lock(t)
		got, s := c.startAsleep(t, waiter, name)
		requireListening(t, s, name, what, c.listens[waiter.String()])
		released := time.Now()
		require.NoError(t, holder.Unlock())
		a := await(t, got, watchdog+10*time.Second, what)
		latency := a.at.Sub(released)
		if waiter.String() == "go" {
			// The holder's lease is renewed every watchdog/3, so the TTL the waiter read
			// before sleeping was between 2/3 and all of the watchdog; it sleeps that long.
			t.Logf("%s: waiter (subscribed %s) got the lock %v after the unlock, not woken by the release "+
				"but by the end of its %v-watchdog TTL sleep%s", what, s.where, latency, watchdog, jvmNote(a))
			sum.add("Redisson %s: %s: %v after the unlock (TTL fallback, watchdog %v)", v, what, latency.Round(time.Millisecond), watchdog)
			assert.GreaterOrEqual(t, latency, watchdog/2,
				"%s: waiter woken by the release message, expected the mismatched pub/sub kinds to miss it", what)
			assert.LessOrEqual(t, latency, watchdog+time.Second, "%s: waiter did not retry at the end of the TTL", what)
		} else {
			t.Logf("%s: waiter (subscribed %s) woken %v after the unlock%s", what, s.where, latency, jvmNote(a))
			sum.add("Redisson %s: %s: %v after the unlock (woken by Go's SPUBLISH)", v, what, latency.Round(time.Millisecond))
			assert.Less(t, latency, wakeBound, "%s: waiter not woken by the release message", what)
		}
		assert.Equal(t, map[string]string{waiter.Field(t): "1"}, e.hgetall(name), what)
		require.NoError(t, waiter.Unlock())
		assert.Empty(t, e.hgetall(name), what)
	}
}
