package redistest

import (
	"context"
	"net"
	"slices"
	"testing"
	"time"

	"github.com/redis/rueidis"
)

func TestSentinelStartClientAndFailover(t *testing.T) {
	begin := time.Now()
	s := StartSentinel(t)
	t.Logf("sentinel deployment ready in %v", time.Since(begin))
	if got := s.SentinelAddrs(); len(got) != 3 {
		t.Fatalf("SentinelAddrs() = %v, want 3", got)
	}
	for _, a := range append(s.SentinelAddrs(), s.DataAddrs()...) {
		if host, _, err := net.SplitHostPort(a); err != nil || host != "127.0.0.1" {
			t.Fatalf("address %q: want host 127.0.0.1 (%v)", a, err)
		}
	}
	master := s.MasterAddr(t)
	if master != s.DataAddrs()[0] {
		t.Fatalf("MasterAddr = %s, want the first data node %s", master, s.DataAddrs()[0])
	}
	c := s.Client(t)
	do := func(cmd rueidis.Completed) rueidis.RedisResult {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		return c.Do(ctx, cmd)
	}
	if got, err := do(c.B().Ping().Build()).ToString(); err != nil || got != "PONG" {
		t.Fatalf("PING = %q, %v", got, err)
	}
	if err := do(c.B().Set().Key("k").Value("v1").Build()).Error(); err != nil {
		t.Fatal(err)
	}
	// The client talks to the master: the key is there, and replicated to both replicas.
	nc := s.NodeClient(t, master)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	res := nc.DoMulti(ctx, nc.B().Set().Key("k2").Value("v2").Build(), nc.B().Wait().Numreplicas(2).Timeout(2000).Build())
	cancel()
	if n, err := res[1].AsInt64(); err != nil || n != 2 {
		t.Fatalf("WAIT 2 on the master = %d, %v", n, err)
	}

	begin = time.Now()
	old := s.KillMaster(t)
	if old != master {
		t.Fatalf("KillMaster killed %s, want %s", old, master)
	}
	newMaster := s.WaitFailover(t, old)
	t.Logf("kill -9 %s: sentinels promoted %s in %v", old, newMaster, time.Since(begin))
	if newMaster == old || !slices.Contains(s.DataAddrs(), newMaster) {
		t.Fatalf("WaitFailover = %s (old %s, data nodes %v)", newMaster, old, s.DataAddrs())
	}
	if got := s.MasterAddr(t); got != newMaster {
		t.Fatalf("MasterAddr after failover = %s, want %s", got, newMaster)
	}
	// The client follows the failover by itself: writes succeed again, data written
	// before the kill is there.
	deadline := time.Now().Add(15 * time.Second)
	for {
		err := do(c.B().Set().Key("k3").Value("v3").Build()).Error()
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("SET after failover: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Logf("client writes again %v after the kill", time.Since(begin))
	for k, want := range map[string]string{"k": "v1", "k2": "v2", "k3": "v3"} {
		if got, err := do(c.B().Get().Key(k).Build()).ToString(); err != nil || got != want {
			t.Fatalf("GET %s after failover = %q, %v; want %q", k, got, err, want)
		}
	}
}
