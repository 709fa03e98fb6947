package redistest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/goredisson/goredisson/internal/redisserver"
)

// SentinelMasterSet is the name under which the sentinels of [StartSentinel] monitor the
// master.
const SentinelMasterSet = "mymaster"

// Sentinel timings of [StartSentinel]: a master unreachable for sentinelDownAfter is
// subjectively down; with the quorum agreeing, a replica is promoted about a second later.
// Sentinels ping each instance once a second, so with a down-after of one second a master
// just promoted was sometimes judged down before its first reply, and a second election
// followed the first: sentinelDownAfter is two seconds.
const (
	sentinelQuorum          = 2
	sentinelDownAfter       = 2000 * time.Millisecond
	sentinelFailoverTimeout = 3000 * time.Millisecond
)

// Sentinel is a Redis Sentinel deployment on 127.0.0.1: one master, two replicas and three
// sentinels (quorum 2, down-after-milliseconds 2000, failover-timeout 3000) monitoring it as
// [SentinelMasterSet], all redis-server child processes started by [StartSentinel] and
// SIGKILLed in its test's Cleanup.
//
// Its methods are safe for concurrent use. Every wait is bounded (45 s) and fails the test
// when the state it promises is not reached.
type Sentinel struct {
	dir       string
	data      []*node // the first one was started as the master
	sentinels []*node

	mu sync.Mutex // serializes fault helpers
}

// StartSentinel starts the master, its two replicas (replicaof the master) and the three
// sentinels, each on a free loopback port in its own directory and without persistence, and
// returns once every sentinel names the master, sees both replicas with their link ok and
// knows the two other sentinels, and both replicas report their link up.
func StartSentinel(t testing.TB) *Sentinel {
	t.Helper()
	begin := time.Now()
	bin, build := programBuild(t)
	s := &Sentinel{}
	s.dir = topologyDir(t, "redistest-sentinel-", s.stop)
	dir := s.dir
	ctx, cancel := context.WithTimeout(context.Background(), topologyTimeout)
	defer cancel()

	ports := newPortPicker()
	var masterPort string
	for i := range 3 {
		n, err := startNode(ctx, ports, filepath.Join(dir, "redis"+strconv.Itoa(i)), func(port, dir string) ([]string, error) {
			argv := []string{bin,
				"--port", port,
				"--bind", "127.0.0.1",
				"--save", "",
				"--appendonly", "no",
				"--repl-diskless-sync-delay", "0",
				"--daemonize", "no",
				"--dir", dir,
				"--logfile", filepath.Join(dir, "redis.log"),
			}
			if i > 0 {
				argv = append(argv, "--replicaof", "127.0.0.1", masterPort)
			}
			return argv, nil
		})
		if err != nil {
			t.Fatalf("redistest: sentinel data node %d: %v", i, err)
		}
		if i == 0 {
			_, masterPort, _ = net.SplitHostPort(n.addr)
		}
		s.data = append(s.data, n)
	}
	for i := range 3 {
		n, err := startNode(ctx, ports, filepath.Join(dir, "sentinel"+strconv.Itoa(i)), func(port, dir string) ([]string, error) {
			conf := filepath.Join(dir, "sentinel.conf")
			text := fmt.Sprintf(`port %s
bind 127.0.0.1
daemonize no
dir %s
logfile %s
sentinel monitor %s 127.0.0.1 %s %d
sentinel down-after-milliseconds %s %d
sentinel failover-timeout %s %d
sentinel parallel-syncs %s 1
`, port, dir, filepath.Join(dir, "redis.log"),
				SentinelMasterSet, masterPort, sentinelQuorum,
				SentinelMasterSet, sentinelDownAfter.Milliseconds(),
				SentinelMasterSet, sentinelFailoverTimeout.Milliseconds(),
				SentinelMasterSet)
			if err := os.WriteFile(conf, []byte(text), 0o644); err != nil {
				return nil, err
			}
			return []string{bin, conf, "--sentinel"}, nil
		})
		if err != nil {
			t.Fatalf("redistest: sentinel %d: %v", i, err)
		}
		s.sentinels = append(s.sentinels, n)
	}
	master := s.data[0].addr
	if err := redisserver.Poll(ctx, "sentinels ready", func() error { return s.ready(master) }); err != nil {
		t.Fatalf("%v\n%s", err, s.logTails())
	}
	announce(t, ModeProcess, "Redis Sentinel: 3 server and 3 sentinel processes, "+bin+", "+build.String())
	t.Logf("redistest: sentinel master %s, replicas %s %s, sentinels %v ready in %v",
		master, s.data[1].addr, s.data[2].addr, s.SentinelAddrs(), time.Since(begin).Round(time.Millisecond))
	return s
}

// SentinelAddrs returns the addresses of the three sentinels.
func (s *Sentinel) SentinelAddrs() []string {
	return addrs(s.sentinels)
}

// DataAddrs returns the addresses of the three data nodes (master and replicas, in start
// order; the first was the initial master), killed ones included.
func (s *Sentinel) DataAddrs() []string {
	return addrs(s.data)
}

// MasterAddr returns the master's address once every sentinel names the same one and it
// answers ROLE as a master.
func (s *Sentinel) MasterAddr(t testing.TB) string {
	t.Helper()
	var addr string
	s.wait(t, "the sentinels to agree on a running master", func() error {
		a, err := s.agreedMaster()
		if err != nil {
			return err
		}
		if role, err := nodeRole(a); err != nil || role != "master" {
			return fmt.Errorf("ROLE of %s is %q (%v)", a, role, err)
		}
		addr = a
		return nil
	})
	return addr
}

// Client returns a rueidis client that finds the master through the sentinels
// (InitAddress = SentinelAddrs, Sentinel.MasterSet = [SentinelMasterSet]) and follows its
// failovers, and closes it in t.Cleanup. Each opt edits the [rueidis.ClientOption] after
// those fields are set.
func (s *Sentinel) Client(t testing.TB, opts ...func(*rueidis.ClientOption)) rueidis.Client {
	t.Helper()
	return newClient(t, rueidis.ClientOption{
		InitAddress: s.SentinelAddrs(),
		Sentinel:    rueidis.SentinelOption{MasterSet: SentinelMasterSet},
	}, opts, rueidis.ClientModeSentinel)
}

// NodeClient returns a rueidis client bound to the data node or sentinel at addr, closed in
// t.Cleanup: for node-local commands such as ROLE, INFO or PUBSUB NUMSUB.
func (s *Sentinel) NodeClient(t testing.TB, addr string, opts ...func(*rueidis.ClientOption)) rueidis.Client {
	t.Helper()
	s.node(t, addr)
	return newClient(t, nodeOption(addr), opts, "")
}

// KillMaster sends SIGKILL to the current master (as [Sentinel.MasterAddr] finds it) and
// returns its address once it has exited. The sentinels promote a replica about 3-4 s later;
// see [Sentinel.WaitFailover].
func (s *Sentinel) KillMaster(t testing.TB) string {
	t.Helper()
	addr := s.MasterAddr(t)
	s.mu.Lock()
	defer s.mu.Unlock()
	n := s.node(t, addr)
	ctx, cancel := context.WithTimeout(context.Background(), topologyTimeout)
	defer cancel()
	if err := n.kill(ctx); err != nil {
		t.Fatalf("redistest: kill sentinel master %s: %v", addr, err)
	}
	return addr
}

// WaitFailover returns the new master's address once every sentinel names the same master,
// other than oldMaster, and that node answers ROLE as a master.
func (s *Sentinel) WaitFailover(t testing.TB, oldMaster string) string {
	t.Helper()
	var addr string
	s.wait(t, "a failover away from "+oldMaster, func() error {
		a, err := s.agreedMaster()
		if err != nil {
			return err
		}
		if a == oldMaster {
			return fmt.Errorf("the sentinels still name %s", oldMaster)
		}
		if role, err := nodeRole(a); err != nil || role != "master" {
			return fmt.Errorf("ROLE of %s is %q (%v)", a, role, err)
		}
		addr = a
		return nil
	})
	return addr
}

// agreedMaster returns the master that every running sentinel names.
func (s *Sentinel) agreedMaster() (string, error) {
	var master string
	for _, n := range s.sentinels {
		if n.getState() != running {
			continue
		}
		a, err := sentinelMaster(n.addr)
		if err != nil {
			return "", err
		}
		if master != "" && a != master {
			return "", fmt.Errorf("sentinels disagree: %s and %s", master, a)
		}
		master = a
	}
	if master == "" {
		return "", errors.New("no sentinel runs")
	}
	return master, nil
}

// ready returns nil once every sentinel names master, sees it up with both replicas linked
// and knows the other sentinels, and both replicas report their link up.
func (s *Sentinel) ready(master string) error {
	for _, n := range s.data[1:] {
		if err := linkUp(n.addr); err != nil {
			return err
		}
	}
	for _, n := range s.sentinels {
		a, err := sentinelMaster(n.addr)
		if err != nil {
			return err
		}
		if a != master {
			return fmt.Errorf("sentinel %s names %s, want %s", n.addr, a, master)
		}
		v, err := nodeCmd(n.addr, cmdTimeout, "SENTINEL", "MASTER", SentinelMasterSet)
		if err != nil {
			return fmt.Errorf("SENTINEL MASTER on %s: %w", n.addr, err)
		}
		m := pairs(v)
		if m["flags"] != "master" || m["num-slaves"] != "2" || m["num-other-sentinels"] != strconv.Itoa(len(s.sentinels)-1) {
			return fmt.Errorf("sentinel %s: flags=%s num-slaves=%s num-other-sentinels=%s",
				n.addr, m["flags"], m["num-slaves"], m["num-other-sentinels"])
		}
		v, err = nodeCmd(n.addr, cmdTimeout, "SENTINEL", "REPLICAS", SentinelMasterSet)
		if err != nil {
			return fmt.Errorf("SENTINEL REPLICAS on %s: %w", n.addr, err)
		}
		list, _ := v.([]any)
		for _, r := range list {
			rm := pairs(r)
			if rm["flags"] != "slave" || rm["master-link-status"] != "ok" {
				return fmt.Errorf("sentinel %s sees replica %s:%s flags=%s master-link-status=%s",
					n.addr, rm["ip"], rm["port"], rm["flags"], rm["master-link-status"])
			}
		}
	}
	return nil
}

func (s *Sentinel) node(t testing.TB, addr string) *node {
	t.Helper()
	for _, n := range slices.Concat(s.data, s.sentinels) {
		if n.addr == addr {
			return n
		}
	}
	t.Fatalf("redistest: %s is not a node of the sentinel deployment", addr)
	return nil
}

func (s *Sentinel) wait(t testing.TB, what string, check func() error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), topologyTimeout)
	defer cancel()
	if err := redisserver.Poll(ctx, what, check); err != nil {
		t.Fatalf("%v\n%s", err, s.logTails())
	}
}

func (s *Sentinel) stop() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	// Sentinels first, so that none reconfigures the data nodes while they stop.
	if err := stopNodes(s.dir, slices.Concat(s.sentinels, s.data)); err != nil {
		return fmt.Errorf("redistest: stop sentinel deployment: %w", err)
	}
	return nil
}

func (s *Sentinel) logTails() string { return logTails(slices.Concat(s.data, s.sentinels)) }

// sentinelMaster asks the sentinel at addr for the master's address.
func sentinelMaster(addr string) (string, error) {
	v, err := nodeCmd(addr, cmdTimeout, "SENTINEL", "GET-MASTER-ADDR-BY-NAME", SentinelMasterSet)
	if err != nil {
		return "", fmt.Errorf("SENTINEL GET-MASTER-ADDR-BY-NAME on %s: %w", addr, err)
	}
	a, ok := v.([]any)
	if !ok || len(a) != 2 {
		return "", fmt.Errorf("sentinel %s: GET-MASTER-ADDR-BY-NAME replied %v", addr, v)
	}
	return net.JoinHostPort(asString(a[0]), asString(a[1])), nil
}

// pairs turns a flat [k1 v1 k2 v2 ...] reply into a map.
func pairs(v any) map[string]string {
	a, _ := v.([]any)
	m := make(map[string]string, len(a)/2)
	for i := 0; i+1 < len(a); i += 2 {
		m[asString(a[i])] = strings.TrimSpace(asString(a[i+1]))
	}
	return m
}
