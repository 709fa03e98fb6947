package redistest

import (
	"context"
	"fmt"
	"net"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/goredisson/goredisson/internal/redisserver"
)

// clusterDo runs "cmd key args..." through c with a 5 s deadline.
func clusterDo(t *testing.T, c rueidis.Client, cmd, key string, args ...string) rueidis.RedisResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return c.Do(ctx, c.B().Arbitrary(cmd).Keys(key).Args(args...).Build())
}

// setGetEverywhere writes and reads back n keys spread over every slot owner, retrying each
// for up to 10 s (the client may still be learning a new topology), and returns the masters
// that served them.
func setGetEverywhere(t *testing.T, cl *Cluster, c rueidis.Client, prefix string, n int) map[string]int {
	t.Helper()
	owners := map[string]int{}
	for i := range n {
		key := fmt.Sprintf("%s:%d", prefix, i)
		val := strconv.Itoa(i * 7)
		deadline := time.Now().Add(10 * time.Second)
		for {
			err := clusterDo(t, c, "SET", key, val).Error()
			var got string
			if err == nil {
				got, err = clusterDo(t, c, "GET", key).ToString()
			}
			if err == nil && got == val {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("SET/GET %s: got %q, %v", key, got, err)
			}
			time.Sleep(50 * time.Millisecond)
		}
		owners[cl.MasterOf(t, key)]++
	}
	return owners
}

func TestClusterStartsHealthyAndServesAllSlots(t *testing.T) {
	start := time.Now()
	cl := StartCluster(t)
	t.Logf("cluster ready in %v", time.Since(start))

	addrs := cl.Addrs()
	if len(addrs) != 6 {
		t.Fatalf("Addrs() = %v, want 6 nodes", addrs)
	}
	for _, a := range addrs {
		if host, _, err := net.SplitHostPort(a); err != nil || host != "127.0.0.1" {
			t.Fatalf("node address %q: want host 127.0.0.1 (%v)", a, err)
		}
	}
	c := cl.Client(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if got, err := c.Do(ctx, c.B().Ping().Build()).ToString(); err != nil || got != "PONG" {
		t.Fatalf("PING = %q, %v", got, err)
	}
	owners := setGetEverywhere(t, cl, c, "harness", 60)
	if len(owners) != 3 {
		t.Fatalf("60 keys landed on masters %v, want 3 distinct", owners)
	}
	for m := range owners {
		role, err := nodeRole(m)
		if err != nil || role != "master" {
			t.Fatalf("MasterOf gave %s whose ROLE is %q (%v)", m, role, err)
		}
		r := cl.ReplicaOf(t, m)
		if r == m || !slices.Contains(addrs, r) {
			t.Fatalf("ReplicaOf(%s) = %s", m, r)
		}
		if role, err := nodeRole(r); err != nil || role != "slave" {
			t.Fatalf("ReplicaOf(%s) = %s whose ROLE is %q (%v)", m, r, role, err)
		}
	}
	// Hash tags put keys in one slot, on one master.
	if a, b := cl.MasterOf(t, "{user:7}:profile"), cl.MasterOf(t, "redisson_lock__channel:{user:7}:profile"); a != b {
		t.Fatalf("hash-tagged keys on %s and %s", a, b)
	}
}

func TestClusterKillRestartAndFailover(t *testing.T) {
	cl := StartCluster(t)
	c := cl.Client(t)
	const key = "{failover}:k"
	master := cl.MasterOf(t, key)
	replica := cl.ReplicaOf(t, master)
	// SET then WAIT on one connection to the master (rueidis sends a DoMulti holding a blocking
	// command on one dedicated connection): the replica has the key before the master dies.
	nc := cl.NodeClient(t, master)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	res := nc.DoMulti(ctx, nc.B().Set().Key(key).Value("v1").Build(), nc.B().Wait().Numreplicas(1).Timeout(2000).Build())
	cancel()
	if err := res[0].Error(); err != nil {
		t.Fatalf("SET on %s: %v", master, err)
	}
	if n, err := res[1].AsInt64(); err != nil || n < 1 {
		t.Fatalf("WAIT 1 = %d, %v", n, err)
	}

	// SIGKILL of a master: its replica takes over by itself.
	begin := time.Now()
	cl.Kill(t, master)
	if err := redisserver.Ping(master, 200*time.Millisecond); err == nil {
		t.Fatalf("killed node %s still answers", master)
	}
	if got := cl.MasterOf(t, key); got != replica {
		t.Fatalf("after killing %s, slot master is %s, want its replica %s", master, got, replica)
	}
	t.Logf("kill -9 %s: replica %s took over in %v", master, replica, time.Since(begin))
	cl.WaitHealthy(t)
	deadline := time.Now().Add(10 * time.Second)
	for {
		got, err := clusterDo(t, c, "GET", key).ToString()
		if err == nil && got == "v1" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("GET %s after failover = %q, %v", key, got, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	setGetEverywhere(t, cl, c, "afterkill", 30)

	// Restart: the old master rejoins, as a replica of its replacement.
	begin = time.Now()
	cl.Restart(t, master)
	t.Logf("restart %s: rejoined in %v", master, time.Since(begin))
	if role, err := nodeRole(master); err != nil || role != "slave" {
		t.Fatalf("restarted %s has ROLE %q (%v), want slave", master, role, err)
	}
	if got := cl.ReplicaOf(t, replica); got != master {
		t.Fatalf("ReplicaOf(%s) = %s, want the restarted %s", replica, got, master)
	}

	// Graceful failover back, then a forced one.
	for _, force := range []bool{false, true} {
		to, from := master, replica
		if force {
			to, from = replica, master
		}
		begin = time.Now()
		cl.Failover(t, to, force)
		t.Logf("CLUSTER FAILOVER force=%v to %s: done in %v", force, to, time.Since(begin))
		if got := cl.MasterOf(t, key); got != to {
			t.Fatalf("after failover to %s, slot master is %s", to, got)
		}
		if role, err := nodeRole(from); err != nil || role != "slave" {
			t.Fatalf("old master %s has ROLE %q (%v) after failover", from, role, err)
		}
	}
	setGetEverywhere(t, cl, c, "afterfailover", 30)
}

func TestClusterPauseResume(t *testing.T) {
	cl := StartCluster(t)
	m := cl.MasterOf(t, "x")
	r := cl.ReplicaOf(t, m)
	cl.Pause(t, r)
	if err := redisserver.Ping(r, 200*time.Millisecond); err == nil {
		t.Fatalf("paused node %s answers PING", r)
	}
	cl.Resume(t, r)
	if err := redisserver.Ping(r, time.Second); err != nil {
		t.Fatalf("resumed node %s: %v", r, err)
	}
	cl.WaitHealthy(t)
	if got := cl.MasterOf(t, "x"); got != m {
		t.Fatalf("pausing a replica moved the slot master from %s to %s", m, got)
	}
}

func TestParseClusterNodes(t *testing.T) {
	const s = `07c37dfeb235213a872192d90877d0cd55635b91 127.0.0.1:30004@31004,hostname4 slave e7d1eecce10fd6bb5eb35b9f99a514335d9ba9ca 0 1426238317239 4 connected
67ed2db8d677e59ec4a4cefb06858cf2a1a89fa1 127.0.0.1:30002@31002,hostname2 master - 0 1426238316232 2 connected 5461-10922
e7d1eecce10fd6bb5eb35b9f99a514335d9ba9ca 127.0.0.1:30001@31001,hostname1 myself,master - 0 0 1 connected 0-5460 [5461->-67ed2db8d677e59ec4a4cefb06858cf2a1a89fa1]
6ec23923021cf3ffec47632106199cb7f496ce01 127.0.0.1:30005@31005 master,fail - 1426238316232 1426238316232 5 disconnected 10923-16383`
	v, err := parseClusterNodes(s)
	if err != nil {
		t.Fatal(err)
	}
	if o := v.ownerOf(0); o == nil || o.addr != "127.0.0.1:30001" {
		t.Fatalf("ownerOf(0) = %+v", o)
	}
	if o := v.ownerOf(10922); o == nil || o.addr != "127.0.0.1:30002" {
		t.Fatalf("ownerOf(10922) = %+v", o)
	}
	r := v.byAddr["127.0.0.1:30004"]
	if r == nil || r.master() || v.byID[r.masterID].addr != "127.0.0.1:30001" {
		t.Fatalf("replica entry %+v", r)
	}
	if e := v.byAddr["127.0.0.1:30005"]; !e.flags["fail"] || e.link != "disconnected" {
		t.Fatalf("failed entry %+v", e)
	}
}
