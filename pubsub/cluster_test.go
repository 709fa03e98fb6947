package pubsub

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/goredisson/goredisson/internal/keys"
	"github.com/goredisson/goredisson/internal/redistest"
)

// clusterNodes returns a client of each of cl's nodes, by address.
func clusterNodes(t *testing.T, cl *redistest.Cluster) map[string]rueidis.Client {
	nodes := make(map[string]rueidis.Client)
	for _, addr := range cl.Addrs() {
		nodes[addr] = cl.NodeClient(t, addr)
	}
	return nodes
}

// shardSubscribers returns, for each node, how many clients are subscribed to channel with
// SSUBSCRIBE there; nodes with none are left out.
func shardSubscribers(t *testing.T, nodes map[string]rueidis.Client, channel string) map[string]int64 {
	out := make(map[string]int64)
	for addr, nc := range nodes {
		if n := redistest.ShardNumSub(t, nc, channel); n > 0 {
			out[addr] = n
		}
	}
	return out
}

// shardedConnections returns how many connections of node nc hold sharded subscriptions.
func shardedConnections(t *testing.T, nc rueidis.Client) int {
	list, err := nc.Do(context.Background(), nc.B().ClientList().TypePubsub().Build()).ToString()
	require.NoError(t, err)
	n := 0
	for _, l := range strings.Split(list, "\n") {
		if i := strings.Index(l, " ssub="); i >= 0 && !strings.HasPrefix(l[i+len(" ssub="):], "0 ") {
			n++
		}
	}
	return n
}

// In a cluster, a client's sharded subscriptions share one connection per master, each
// channel on the master of its slot, and a waiting channel costs no goroutine.
func TestClusterShardedSubscriptionsShareAConnectionPerMaster(t *testing.T) {
	const n = 300
	cl := redistest.StartCluster(t)
	rc := cl.Client(t)
	redistest.Require(t, rc, redistest.ShardedPubSub)
	nodes := clusterNodes(t, cl)
	s := newSubscriber(t, cl.Client(t), Sharded)
	channels, ws, added := subscribeFresh(t, s, n)
	defer closeAll(ws)
	assert.Less(t, added, n/10, "a waiting channel costs no goroutine")

	for _, i := range []int{0, n / 3, n / 2, n - 1} {
		ch := channels[i]
		master := cl.MasterOf(t, ch)
		assert.Equal(t, map[string]int64{master: 1}, shardSubscribers(t, nodes, ch), "%s (slot %d) is subscribed on its master only", ch, keys.Slot(ch))
		require.NoError(t, nodes[master].Do(context.Background(), nodes[master].B().Spublish().Channel(ch).Message("0").Build()).Error())
		require.Eventually(t, func() bool { return woken(ws[i]) }, 5*time.Second, time.Millisecond, "the master's SPUBLISH reaches the waiter of %s", ch)
	}
	masters := mastersOf(t, nodes)
	for addr, nc := range nodes {
		want := 0
		if slices.Contains(masters, addr) {
			want = 1 // 300 channels of random slots: every master serves some
		}
		assert.Equal(t, want, shardedConnections(t, nc), "connections with sharded subscriptions on %s", addr)
	}

	closeAll(ws)
	require.Eventually(t, func() bool { return idle(s) }, 10*time.Second, time.Millisecond)
	for _, ch := range []string{channels[0], channels[n-1]} {
		assert.Empty(t, shardSubscribers(t, nodes, ch), "%s unsubscribed once its waiter left", ch)
	}
}

// When a channel's slot moves to another master, the old master ends the subscription
// (SUNSUBSCRIBE of its own), and the line subscribes again on the new one, where the
// waiter hears the next SPUBLISH.
func TestClusterShardedSubscriptionFollowsItsSlot(t *testing.T) {
	cl := redistest.StartCluster(t)
	rc := cl.Client(t)
	redistest.Require(t, rc, redistest.ShardedPubSub)
	nodes := clusterNodes(t, cl)
	s := newSubscriber(t, cl.Client(t), Sharded)
	ch := channelName()
	ws := subscribeN(t, s, ch, 1, LockRule)
	defer closeAll(ws)

	from := cl.MasterOf(t, ch)
	var to string
	for _, addr := range mastersOf(t, nodes) {
		if addr != from {
			to = addr
			break
		}
	}
	require.NotEmpty(t, to, "another master")
	require.Equal(t, map[string]int64{from: 1}, shardSubscribers(t, nodes, ch))

	moveSlot(t, cl, nodes, ch, from, to)
	require.Eventually(t, func() bool {
		got := shardSubscribers(t, nodes, ch)
		return len(got) == 1 && got[to] == 1
	}, 10*time.Second, 5*time.Millisecond, "%s subscribed again on %s, its slot's new master", ch, to)

	require.NoError(t, nodes[to].Do(context.Background(), nodes[to].B().Spublish().Channel(ch).Message("0").Build()).Error())
	require.Eventually(t, func() bool { return woken(ws[0]) }, 5*time.Second, time.Millisecond, "the new master's SPUBLISH reaches the waiter")
}

// mastersOf returns the addresses of the masters among nodes.
func mastersOf(t *testing.T, nodes map[string]rueidis.Client) []string {
	var out []string
	for addr, nc := range nodes {
		role, err := nc.Do(context.Background(), nc.B().Role().Build()).ToArray()
		require.NoError(t, err)
		if r, _ := role[0].ToString(); r == "master" {
			out = append(out, addr)
		}
	}
	return out
}

// moveSlot moves the slot of key, which holds no key, from master from to master to, as a
// resharding does, and tells every master; it returns once every node agrees.
func moveSlot(t *testing.T, cl *redistest.Cluster, nodes map[string]rueidis.Client, key string, from, to string) {
	slot := keys.Slot(key)
	ctx := redistest.Context(t, testTimeout)
	id := func(addr string) string {
		v, err := nodes[addr].Do(ctx, nodes[addr].B().ClusterMyid().Build()).ToString()
		require.NoError(t, err)
		return v
	}
	fromID, toID := id(from), id(to)
	s := strconv.Itoa(int(slot))
	do := func(addr string, args ...string) {
		cmd := nodes[addr].B().Arbitrary("CLUSTER", "SETSLOT", s).Args(args...).Build()
		require.NoError(t, nodes[addr].Do(ctx, cmd).Error(), "CLUSTER SETSLOT %s %v on %s", s, args, addr)
	}
	do(to, "IMPORTING", fromID)
	do(from, "MIGRATING", toID)
	do(to, "NODE", toID)
	do(from, "NODE", toID)
	for _, addr := range mastersOf(t, nodes) {
		if addr != from && addr != to {
			do(addr, "NODE", toID)
		}
	}
	require.Equal(t, to, cl.MasterOf(t, key))
}

// In a cluster, a client's classic subscriptions are on one node, any one, since every node
// forwards every PUBLISH. When that node dies, they are made again on another live node: the
// waiter is woken to re-check (a message may have been missed), and hears the next PUBLISH.
func TestClusterClassicSubscriptionsMoveWhenTheirNodeDies(t *testing.T) {
	cl := redistest.StartCluster(t)
	nodes := clusterNodes(t, cl)
	s := newSubscriber(t, cl.Client(t), Classic)
	ch := channelName()
	ws := subscribeN(t, s, ch, 1, LockRule)
	defer closeAll(ws)
	on := func() []string {
		var out []string
		for addr, nc := range nodes {
			if n, err := redistest.NumSubOf(context.Background(), nc, ch); err == nil && n > 0 {
				out = append(out, addr)
			}
		}
		return out
	}
	first := on()
	require.Len(t, first, 1, "subscribed on one node")

	cl.Kill(t, first[0])
	delete(nodes, first[0])
	require.Eventually(t, func() bool { return len(on()) == 1 }, 20*time.Second, 10*time.Millisecond,
		"subscribed again on one live node")
	require.NoError(t, ws[0].Wait(redistest.Context(t, testTimeout)), "woken once subscribed again")
	live := on()[0] // the PUBLISH goes to the node the waiter is on; any other would forward it
	requireWokenBy(t, nodes[live], ch, "0", func() bool { return woken(ws[0]) }, "a PUBLISH reaches the waiter")
}

// While a master is down, the sharded subscriptions to the other masters go on at once:
// only the dead node waits between the line's tries.
func TestClusterShardedSubscriptionsGoOnWhileAMasterIsDown(t *testing.T) {
	cl, s, onDead, dead, others := oneMasterAndOthers(t)
	defer closeAll(subscribeN(t, s, onDead, 1, LockRule))

	cl.Kill(t, dead)
	// Until the replica is promoted (about 2 s), the line keeps failing on the dead master's
	// channel, pausing longer each time. Meanwhile:
	probeOthers(t, s, others, "after the kill")
}

// While a master hangs (SIGSTOP: its connection stays open and answers nothing), the
// sharded subscriptions to the other masters go on at once: only the round trip to the
// stopped node waits, for rueidis to give its connection up.
func TestClusterShardedSubscriptionsGoOnWhileAMasterHangs(t *testing.T) {
	cl, s, onHung, hung, others := oneMasterAndOthers(t)
	closeAll(subscribeN(t, s, onHung, 1, LockRule)) // the line has its connection to the node

	cl.Pause(t, hung)
	stuck := make(chan error, 1)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { // its SSUBSCRIBE waits on the stopped node
		w, err := s.Subscribe(ctx, onHung, LockRule)
		if err == nil {
			w.Close()
		}
		stuck <- err
	}()
	require.Eventually(t, func() bool {
		s.h.mu.Lock()
		defer s.h.mu.Unlock()
		b := s.h.live[subKey{channel: onHung, sharded: true}]
		return b != nil && !b.onServer
	}, 5*time.Second, time.Millisecond, "the stopped node's channel is being subscribed")
	probeOthers(t, s, others, "while a master is stopped")

	// Once rueidis gives the stopped node's connection up, the channel is subscribed on the
	// replica that replaced the node (or fails, never confirmed, and is asked for again).
	paused := time.Now()
	select {
	case err := <-stuck:
		t.Logf("the subscription on the stopped master ended %v after the pause: %v", time.Since(paused), err)
	case <-time.After(30 * time.Second):
		t.Fatal("the subscription on the stopped master is still under way after 30 s")
	}
	var w *Waiter
	require.Eventually(t, func() bool { // until the client knows the new master
		var err error
		w, err = s.Subscribe(redistest.Context(t, testTimeout), onHung, LockRule)
		return err == nil
	}, 20*time.Second, 10*time.Millisecond, "subscribed to the stopped master's channel again")
	defer w.Close()
	master := cl.NodeClient(t, cl.MasterOf(t, onHung))
	require.NoError(t, master.Do(context.Background(), master.B().Spublish().Channel(onHung).Message("0").Build()).Error())
	require.Eventually(t, func() bool { return woken(w) }, 5*time.Second, time.Millisecond, "the new master's SPUBLISH wakes the waiter")
}

// oneMasterAndOthers starts a cluster and a Sharded Subscriber on a client of its own, and
// returns a channel, the master of its slot, and 20 channels whose slots the other masters
// serve.
func oneMasterAndOthers(t *testing.T) (cl *redistest.Cluster, s *Subscriber, channel, master string, others []string) {
	cl = redistest.StartCluster(t)
	redistest.Require(t, cl.Client(t), redistest.ShardedPubSub)
	s = newSubscriber(t, cl.Client(t), Sharded)
	channel = channelName()
	master = cl.MasterOf(t, channel)
	for len(others) < 20 {
		if ch := channelName(); cl.MasterOf(t, ch) != master {
			others = append(others, ch)
		}
	}
	return cl, s, channel, master, others
}

// probeOthers subscribes s to channels, one after the other, for 2 s, and checks that none
// took 500 ms or more.
func probeOthers(t *testing.T, s *Subscriber, channels []string, when string) {
	start := time.Now()
	var slowest time.Duration
	probes := 0
	for time.Since(start) < 2*time.Second {
		ch := channels[probes%len(channels)]
		begin := time.Now()
		ws := subscribeN(t, s, ch, 1, LockRule)
		slowest = max(slowest, time.Since(begin))
		closeAll(ws)
		probes++
	}
	t.Logf("%d subscriptions to live masters in the 2 s %s; the slowest took %v", probes, when, slowest)
	assert.Less(t, slowest, 500*time.Millisecond, "the slowest subscription to a live master")
}
