package integration

// Redis Sentinel test of rlock on a loopback deployment (redistest.StartSentinel: 1 master,
// 2 replicas, 3 sentinels, quorum 2, down-after 2000 ms): the fast form of F10 (docs/SCENARIOS.md).

import (
	"context"
	"fmt"
	"maps"
	"net"
	"slices"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/goredisson/goredisson/internal/redistest"
	"github.com/goredisson/goredisson/internal/redistest/rlocktest"
	"github.com/goredisson/goredisson/rlock"
)

// numSub returns PUBSUB NUMSUB of ch on one node.
func numSub(t *testing.T, nc rueidis.Client, ch string) int64 {
	t.Helper()
	ctx, cancel := within(context.Background(), 2*time.Second)
	defer cancel()
	n, err := redistest.NumSubOf(ctx, nc, ch)
	if err != nil {
		return -1 // the node may be down
	}
	return n
}

// TestSentinelF10KillMaster is the fast form of F10: 5 goroutines on two sentinel clients
// lock (10 s lease) and unlock 20 names every 50 ms; the master is SIGKILLed and the
// sentinels promote a replica. No operation may hang, errors are allowed only in the
// failover window, and the loops succeed again after it, each worker's last operation ok.
// Alongside, a waiter blocked during the failover resubscribes on the new master and
// acquires after the holder's unlock there.
func TestSentinelF10KillMaster(t *testing.T) {
	const lease = 10 * time.Second
	s := redistest.StartSentinel(t)
	ctx, cancel := within(context.Background(), 90*time.Second)
	defer cancel()
	rcA, rcB := s.Client(t), s.Client(t)
	a := rlocktest.NewClient(t, rcA, rlock.Options{})
	b := rlocktest.NewClient(t, rcB, rlock.Options{})
	master := s.MasterAddr(t)
	names := make([]string, 20)
	for i := range names {
		names[i] = fmt.Sprintf("f10:lock:%d", i)
	}

	// A holder with an explicit lease and a waiter on the other client, blocked on its
	// subscription on the master when the master dies.
	const handoff = "f10:handoff"
	ch := lockChannelOf(handoff)
	h := startFailoverHandoff(t, ctx, a, b, handoff, 30*time.Second)
	oldNode := s.NodeClient(t, master)
	require.True(t, waitFor(5*time.Second, func() bool { return numSub(t, oldNode, ch) == 1 }),
		"waiter not subscribed to %s on %s", ch, master)

	ld := startLoad(t, loadConfig{
		workers:   5,
		names:     names,
		clients:   []*rlock.Client{a, b},
		acquire:   func(ctx context.Context, l *rlock.Lock) error { return l.LockFor(ctx, lease) },
		opTimeout: 12 * time.Second, // beyond the lease: waiting out an orphaned hold is no error
		hold:      2 * time.Millisecond,
		every:     50 * time.Millisecond,
	})
	ld.waitSuccessesAfter(t, time.Now(), 10, 10*time.Second)

	killAt := time.Now()
	old := s.KillMaster(t)
	require.Equal(t, master, old)
	promoted := s.WaitFailover(t, old)
	recoveredAt := time.Now()
	t.Logf("kill -9 %s: sentinels promoted %s %v later", old, promoted, recoveredAt.Sub(killAt).Round(time.Millisecond))
	// The clients learn the new master from the sentinels a moment later (about 1 s after
	// all three name it, in the runs seen here).
	windowEnd := recoveredAt.Add(3 * time.Second)

	// The waiter resubscribes on the new master; the holder's unlock there wakes it. Should
	// the sentinels elect a second master soon after the first, the master is the one they
	// name at each check.
	sentinels := sentinelClients(t, s)
	nodes := map[string]rueidis.Client{}
	current := promoted
	subscribed := func() bool {
		if m := namedMaster(sentinels); m != "" && m != old {
			current = m
		}
		if nodes[current] == nil {
			nodes[current] = s.NodeClient(t, current)
		}
		return numSub(t, nodes[current], ch) == 1
	}
	resub := waitFor(10*time.Second, subscribed)
	t.Logf("waiter resubscribed on %s: %v (%v after the kill)", current, resub, time.Since(killAt).Round(time.Millisecond))
	if !assert.True(t, resub, "waiter's subscription not restored on the new master") {
		logSubscribers(t, s, sentinels, old, ch)
	}

	// After a second election the first master stays up until the sentinels demote it
	// (about 10 s later), and meanwhile the two clients may follow different masters: no
	// handoff between them can be prompt. So the release waits until both clients and the
	// waiter's subscription have been on the master the sentinels name for a second.
	var on string
	var since time.Time
	settled := waitFor(20*time.Second, func() bool {
		if !subscribed() || !routesTo(rcA, current) || !routesTo(rcB, current) || current != on {
			on, since = current, time.Time{}
			return false
		}
		if since.IsZero() {
			since = time.Now()
		}
		return time.Since(since) >= time.Second
	})
	t.Logf("both clients and the waiter on %s: %v (%v after the kill)", current, settled, time.Since(killAt).Round(time.Millisecond))
	if !assert.True(t, settled, "the clients did not settle on the master the sentinels name") {
		logSubscribers(t, s, sentinels, old, ch)
	}
	h.release(t)

	ld.waitSuccessesAfter(t, windowEnd, 3, 20*time.Second)
	ld.finish(t)
	t.Logf("F10 kill -9: %s", ld.check(t, killAt, windowEnd))
}

// routesTo reports whether rc, a Sentinel client, sends its commands to addr alone.
func routesTo(rc rueidis.Client, addr string) bool {
	nodes := rc.Nodes()
	_, ok := nodes[addr]
	return ok && len(nodes) == 1
}

// namedMaster returns the master that every sentinel (one client each) names, "" when they
// disagree or one does not answer.
func namedMaster(sentinels []rueidis.Client) string {
	ctx, cancel := within(context.Background(), 2*time.Second)
	defer cancel()
	agreed := ""
	for _, sc := range sentinels {
		m, err := sc.Do(ctx, sc.B().SentinelGetMasterAddrByName().Master(redistest.SentinelMasterSet).Build()).AsStrSlice()
		if err != nil || len(m) != 2 {
			return ""
		}
		named := net.JoinHostPort(m[0], m[1])
		if agreed != "" && named != agreed {
			return ""
		}
		agreed = named
	}
	return agreed
}

// sentinelClients returns a client of each sentinel of s.
func sentinelClients(t *testing.T, s *redistest.Sentinel) []rueidis.Client {
	var out []rueidis.Client
	for _, addr := range s.SentinelAddrs() {
		out = append(out, s.NodeClient(t, addr))
	}
	return out
}

// logSubscribers logs the master that the sentinels name, and for each data node but the
// killed one its role, PUBSUB NUMSUB of ch and its subscribed connections.
func logSubscribers(t *testing.T, s *redistest.Sentinel, sentinels []rueidis.Client, killed, ch string) {
	t.Helper()
	ctx, cancel := within(context.Background(), 5*time.Second)
	defer cancel()
	t.Logf("the sentinels name %q", namedMaster(sentinels))
	for _, addr := range s.DataAddrs() {
		if addr == killed {
			continue
		}
		nc := s.NodeClient(t, addr)
		role, _ := nc.Do(ctx, nc.B().Role().Build()).ToArray()
		list, err := nc.Do(ctx, nc.B().ClientList().Build()).ToString()
		var subscribed []redistest.ClientConn
		for _, c := range redistest.ParseClientList(list) {
			if c.Subscribed() {
				subscribed = append(subscribed, c)
			}
		}
		roleName := ""
		if len(role) > 0 {
			roleName, _ = role[0].ToString()
		}
		t.Logf("%s: role %q, NUMSUB %s %d, subscribed connections %+v (CLIENT LIST error: %v)", addr, roleName, ch, numSub(t, nc, ch), subscribed, err)
	}
}

// TestSentinelReplicaSync checks Redisson's default replica sync on a Sentinel client (the
// default Options): every lock write is followed by WAIT on the master, the replicas have
// the write when the call returns, renewals wait too, and ReplicaSyncOff sends no WAIT. With
// both replicas unable to acknowledge (CLIENT PAUSE WRITE), an acquire gives back each of
// its three tries and fails with ErrNotReplicated, leaving nothing held. It logs the
// latency of Lock and Unlock with sync on and off.
func TestSentinelReplicaSync(t *testing.T) {
	s := redistest.StartSentinel(t)
	ctx, cancel := within(context.Background(), 60*time.Second)
	defer cancel()
	master := s.MasterAddr(t)
	m := s.NodeClient(t, master)
	var replicas []rueidis.Client
	for _, addr := range s.DataAddrs() {
		if addr != master {
			replicas = append(replicas, s.NodeClient(t, addr))
		}
	}
	waits := func() int64 {
		n, err := redistest.CommandCalls(ctx, m, "wait")
		require.NoError(t, err)
		return n
	}
	synced := rlocktest.NewClient(t, s.Client(t), rlock.Options{})
	off := rlocktest.NewClient(t, s.Client(t), rlock.Options{ReplicaSync: rlock.ReplicaSyncOff})

	t.Run("Default", func(t *testing.T) {
		l := synced.NewLock("sync:default")
		owner := rlock.NewOwner(ctx)
		before := waits()
		require.NoError(t, l.Lock(owner))
		for i, r := range replicas {
			assert.Equal(t, redistest.HGetAll(t, m, "sync:default"), redistest.HGetAll(t, r, "sync:default"), "replica %d has the hold when Lock returns", i)
		}
		require.NoError(t, l.Unlock(owner))
		for i, r := range replicas {
			assert.Empty(t, redistest.HGetAll(t, r, "sync:default"), "replica %d has the release when Unlock returns", i)
		}
		require.NoError(t, l.Lock(owner))
		existed, err := l.ForceUnlock(owner)
		require.NoError(t, err)
		assert.True(t, existed)
		for i, r := range replicas {
			assert.Empty(t, redistest.HGetAll(t, r, "sync:default"), "replica %d has the delete when ForceUnlock returns", i)
		}
		assert.GreaterOrEqual(t, waits()-before, int64(4), "one WAIT per write")
	})

	t.Run("Renewal", func(t *testing.T) {
		c := rlocktest.NewClient(t, s.Client(t), rlock.Options{WatchdogTimeout: 600 * time.Millisecond})
		l := c.NewLock("sync:renewal")
		owner := rlock.NewOwner(ctx)
		require.NoError(t, l.Lock(owner))
		held := rlocktest.Held(t, l, owner)
		before := waits()
		require.True(t, waitFor(5*time.Second, func() bool { return waits()-before >= 3 }), "renewals send WAIT")
		assert.NoError(t, held.Err())
		require.NoError(t, l.Unlock(owner))
	})

	t.Run("Off", func(t *testing.T) {
		l := off.NewLock("sync:off")
		owner := rlock.NewOwner(ctx)
		before := waits()
		require.NoError(t, l.Lock(owner))
		require.NoError(t, l.Unlock(owner))
		require.NoError(t, l.Lock(owner))
		_, err := l.ForceUnlock(owner)
		require.NoError(t, err)
		assert.Equal(t, before, waits(), "no WAIT")
	})

	t.Run("Latency", func(t *testing.T) {
		const n = 200
		for _, tc := range []struct {
			name string
			c    *rlock.Client
		}{{"sync on (default)", synced}, {"sync off", off}} {
			l := tc.c.NewLock("sync:latency")
			owner := rlock.NewOwner(ctx)
			lock, unlock := make([]time.Duration, n), make([]time.Duration, n)
			for i := range n {
				begin := time.Now()
				require.NoError(t, l.Lock(owner))
				mid := time.Now()
				require.NoError(t, l.Unlock(owner))
				lock[i], unlock[i] = mid.Sub(begin), time.Since(mid)
			}
			t.Logf("%s: Lock p50 %v p99 %v, Unlock p50 %v p99 %v (%d each)", tc.name,
				percentile(lock, 50), percentile(lock, 99), percentile(unlock, 50), percentile(unlock, 99), n)
		}
	})

	t.Run("ReplicasPaused", func(t *testing.T) {
		for _, r := range replicas {
			require.NoError(t, r.Do(ctx, r.B().ClientPause().Timeout(30000).Write().Build()).Error())
		}
		defer func() {
			for _, r := range replicas {
				assert.NoError(t, r.Do(context.Background(), r.B().ClientUnpause().Build()).Error())
			}
		}()
		l := synced.NewLock("sync:paused")
		owner := rlock.NewOwner(ctx)
		before := waits()
		begin := time.Now()
		err := l.Lock(owner)
		t.Logf("Lock with both replicas paused: %v after %v", err, time.Since(begin).Round(time.Millisecond))
		require.ErrorIs(t, err, rlock.ErrNotReplicated)
		assert.Empty(t, redistest.HGetAll(t, m, "sync:paused"), "every try given back")
		held, err := l.IsHeld(owner)
		require.NoError(t, err)
		assert.False(t, held)
		assert.Equal(t, int64(3), waits()-before, "one WAIT per try")
	})
}

// percentile returns the p-th percentile of ds, which it sorts.
func percentile(ds []time.Duration, p int) time.Duration {
	slices.Sort(ds)
	return ds[(len(ds)-1)*p/100].Round(time.Microsecond)
}

// TestSentinelSubscriptionFollowsMaster checks that a waiter's subscription follows the
// master through a manual failover (SENTINEL FAILOVER), where the old master stays up and
// becomes a replica: once the client follows the new master, the waiter is subscribed there
// and on no other node, and the holder's unlock on the new master wakes it.
func TestSentinelSubscriptionFollowsMaster(t *testing.T) {
	s := redistest.StartSentinel(t)
	ctx, cancel := within(context.Background(), 60*time.Second)
	defer cancel()
	rcA := s.Client(t)
	a := rlocktest.NewClient(t, rcA, rlock.Options{})
	b := rlocktest.NewClient(t, s.Client(t), rlock.Options{})
	old := s.MasterAddr(t)
	const name = "follow:handoff"
	ch := lockChannelOf(name)
	nodes := map[string]rueidis.Client{}
	for _, addr := range s.DataAddrs() {
		nodes[addr] = s.NodeClient(t, addr)
	}
	h := startFailoverHandoff(t, ctx, a, b, name, 30*time.Second)
	require.True(t, waitFor(5*time.Second, func() bool { return numSub(t, nodes[old], ch) == 1 }),
		"waiter not subscribed to %s on %s", ch, old)

	sc := s.NodeClient(t, s.SentinelAddrs()[0])
	require.NoError(t, sc.Do(ctx, sc.B().Arbitrary("SENTINEL", "FAILOVER").Args(redistest.SentinelMasterSet).Build()).Error())
	promoted := s.WaitFailover(t, old)
	start := time.Now()
	where := func() map[string]int64 {
		m := map[string]int64{}
		for addr, nc := range nodes {
			if n := numSub(t, nc, ch); n != 0 {
				m[addr] = n
			}
		}
		return m
	}
	followed := waitFor(5*time.Second, func() bool {
		return maps.Equal(where(), map[string]int64{promoted: 1})
	})
	t.Logf("SENTINEL FAILOVER: %s -> %s; waiter subscribed only on the new master: %v (%v after the sentinels named it); subscriptions now %v",
		old, promoted, followed, time.Since(start).Round(time.Millisecond), where())
	require.True(t, followed, "the waiter's subscription did not follow the master to %s", promoted)
	require.True(t, waitFor(10*time.Second, func() bool { _, ok := rcA.Nodes()[promoted]; return ok }),
		"the holder's client does not follow %s", promoted)
	h.release(t)
}
