package partition

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redis/rueidis"
)

// sentinelHosts are the Sentinels' host names.
var sentinelHosts = []string{"n1", "n2", "n3"}

// startSentinel starts a master (s1) with two replicas (s2, s3), and three Sentinels
// (n1-n3, quorum 2, down after 1 s), each in a host of its own, and returns once the
// Sentinels agree on the master, its two replicas and each other.
func startSentinel(t *testing.T, tp *topology) *cluster {
	t.Helper()
	c := startServers(t, tp, 1)
	master := c.addr("s1")
	for _, name := range []string{"s2", "s3"} {
		tp.host(name)
		c.servers = append(c.servers, name)
		c.start(t, name, "--replicaof", tp.hosts["s1"], "6379")
	}
	for _, name := range sentinelHosts {
		tp.host(name)
		dir := filepath.Join(c.dir, name)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		conf := filepath.Join(dir, "sentinel.conf")
		body := fmt.Sprintf("port 26379\nbind %s\ndir %s\nlogfile %s\n"+
			"sentinel monitor mymaster %s 6379 2\n"+
			"sentinel down-after-milliseconds mymaster 1000\n"+
			"sentinel failover-timeout mymaster 3000\n"+
			"sentinel parallel-syncs mymaster 1\n",
			tp.hosts[name], dir, filepath.Join(dir, "sentinel.log"), tp.hosts["s1"])
		if err := os.WriteFile(conf, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		cmd := tp.command(name, "redis-server", conf, "--sentinel")
		if err := cmd.Start(); err != nil {
			t.Fatalf("start %s: %v", name, err)
		}
		c.procs[name] = cmd
	}
	waitFor(t, 30*time.Second, "Sentinels agree on the master, 2 replicas and 2 other Sentinels", func() error {
		for _, name := range sentinelHosts {
			m, err := sentinelMaster(net.JoinHostPort(tp.hosts[name], "26379"))
			if err != nil {
				return err
			}
			if m["ip"]+":"+m["port"] != master || m["num-slaves"] != "2" || m["num-other-sentinels"] != "2" {
				return fmt.Errorf("%s sees %v", name, m)
			}
		}
		return nil
	})
	return c
}

// sentinelAddrs returns the Sentinels' addresses.
func (c *cluster) sentinelAddrs() []string {
	var out []string
	for _, name := range sentinelHosts {
		out = append(out, net.JoinHostPort(c.tp.hosts[name], "26379"))
	}
	return out
}

// currentMaster returns the host name of the server the Sentinels name master now.
func (c *cluster) currentMaster(t *testing.T) string {
	t.Helper()
	for _, addr := range c.sentinelAddrs() {
		m, err := sentinelMaster(addr)
		if err != nil {
			continue
		}
		for _, name := range c.servers {
			if c.tp.hosts[name] == m["ip"] {
				return name
			}
		}
	}
	t.Fatalf("no Sentinel names a master")
	return ""
}

// sentinelMaster returns SENTINEL MASTER mymaster from the Sentinel at addr.
func sentinelMaster(addr string) (map[string]string, error) {
	rc, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{addr}, DisableRetry: true,
		ForceSingleClient: true, Dialer: net.Dialer{Timeout: time.Second}})
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	return rc.Do(ctx, rc.B().Arbitrary("SENTINEL", "MASTER", "mymaster").Build()).AsStrMap()
}

// waitFor polls check until it returns nil, failing t after d with its last error.
func waitFor(t *testing.T, d time.Duration, what string, check func() error) {
	t.Helper()
	var err error
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
		if err = check(); err == nil {
			return
		}
	}
	t.Fatalf("%s: not within %v: %v", what, d, err)
}

// The Sentinel faults.
var (
	// killMaster: the master is killed (SIGKILL); the Sentinels promote a replica; the old
	// master comes back empty when the fault ends, and the Sentinels make it a replica.
	killMaster = fault{name: "master killed, failover", inject: func(t *testing.T, s *scenario, _ int) func() {
		m := s.srv.currentMaster(t)
		s.srv.kill(m)
		return func() { s.srv.start(t, m) }
	}}
	// isolateMaster: the master is cut from the Sentinels and the replicas, not from the
	// clients: the Sentinels promote a replica while the old master still answers the
	// clients that reach it; when the fault ends it rejoins as a replica of the new one.
	isolateMaster = fault{name: "master cut from Sentinels and replicas", inject: func(t *testing.T, s *scenario, _ int) func() {
		m := s.srv.currentMaster(t)
		var others []string
		for _, name := range append(append([]string{}, s.srv.servers...), sentinelHosts...) {
			if name != m {
				others = append(others, name)
			}
		}
		for _, o := range others {
			s.tp.cut(m, o)
		}
		return func() {
			for _, o := range others {
				s.tp.heal(m, o)
			}
		}
	}}
)

// sentinelArgs is the lockclient flag for the Sentinels.
func sentinelArgs(c *cluster) []string {
	return []string{"-sentinel", strings.Join(c.sentinelAddrs(), ",")}
}
