package redistest

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/goredisson/goredisson/internal/keys"
	"github.com/goredisson/goredisson/internal/redisserver"
)

// Topologies ([StartCluster], [StartSentinel]) always run redis-server child processes on
// loopback, whatever GOREDISSON_REDIS says: a cluster or a sentinel group of containers
// would need a network with addresses the host can reach, which these machines do not have.

const (
	// topologyTimeout bounds each wait of a cluster or sentinel helper (start, failover,
	// healthy). Failing waits fail the test; passing ones take a few seconds.
	topologyTimeout = 45 * time.Second
	// cmdTimeout bounds one harness command to a node (dial, write and read).
	cmdTimeout = 500 * time.Millisecond
	// clusterNodeTimeout is --cluster-node-timeout: a master unreachable this long is
	// flagged failing and its replica is promoted about a second later.
	clusterNodeTimeout = 1000 * time.Millisecond
)

// Cluster is a Redis Cluster of 6 redis-server processes on 127.0.0.1, 3 masters with one
// replica each, started by [StartCluster] and stopped in its test's Cleanup. Nodes are named
// by their address "127.0.0.1:port", which stays the same across Kill and Restart.
//
// Its methods are safe for concurrent use; fault helpers run one at a time. Every wait is
// bounded (45 s) and fails the test when the state it promises is not reached.
type Cluster struct {
	dir   string
	nodes []*node // in creation order (redis-cli makes the first three masters)

	mu sync.Mutex // serializes fault helpers
}

// ClusterOption changes how [StartCluster] starts its nodes.
type ClusterOption func(*clusterConfig)

type clusterConfig struct {
	serverArgs []string
	noSharded  bool
}

// WithoutShardedPubSub runs the cluster without sharded pub/sub, as a Redis 6 cluster runs:
// on a server line that has it, SPUBLISH, SSUBSCRIBE and SUNSUBSCRIBE are renamed away
// (--rename-command); a line before 7.0 lacks them already, and refuses to rename them.
func WithoutShardedPubSub() ClusterOption {
	return func(c *clusterConfig) { c.noSharded = true }
}

// WithServerArgs adds args to the command line of every node, on every start, after the
// harness's own: for example "--rename-command", "SPUBLISH", "" to run a cluster without
// that command. An empty argument is passed as an empty string.
func WithServerArgs(args ...string) ClusterOption {
	return func(c *clusterConfig) { c.serverArgs = append(c.serverArgs, args...) }
}

// StartCluster starts a 6-node Redis Cluster (--cluster-replicas 1) on free loopback ports,
// each node with --cluster-node-timeout 1000, no persistence and the args of any
// [WithServerArgs], creates it with
// `redis-cli --cluster create`, and returns once every node reports cluster_state:ok with all
// 16384 slots served, all nodes agree on the slot owners, and every replica's link to its
// master is up (about 2-3 s). The processes are SIGKILLed in t.Cleanup, which then also
// waits (at most 6 s, only after a topology change) for the goroutines with which rueidis
// cluster clients close replaced connections 5 s late, so that [Main]'s leak check passes.
func StartCluster(t testing.TB, opts ...ClusterOption) *Cluster {
	t.Helper()
	var cfg clusterConfig
	for _, o := range opts {
		o(&cfg)
	}
	begin := time.Now()
	bin, build := programBuild(t)
	cli := lookRedis(t, "redis-cli")
	c := &Cluster{}
	c.dir = topologyDir(t, "redistest-cluster-", c.stop)
	dir := c.dir
	ctx, cancel := context.WithTimeout(context.Background(), topologyTimeout)
	defer cancel()

	ports := newPortPicker()
	if build.Before(7, 0) {
		ports.busOffset = 10000
	}
	if cfg.noSharded && !build.Before(7, 0) {
		for _, c := range []string{"SPUBLISH", "SSUBSCRIBE", "SUNSUBSCRIBE"} {
			cfg.serverArgs = append(cfg.serverArgs, "--rename-command", c, "")
		}
	}
	for i := range 6 {
		n, err := startNode(ctx, ports, filepath.Join(dir, strconv.Itoa(i)), func(port, dir string) ([]string, error) {
			argv := []string{bin, "--port", port}
			if !build.Before(7, 0) { // older lines put the bus on port+10000: see portPicker
				bus, err := ports.pick()
				if err != nil {
					return nil, err
				}
				argv = append(argv, "--cluster-port", strconv.Itoa(bus))
			}
			return append(append(argv,
				"--bind", "127.0.0.1",
				"--cluster-enabled", "yes",
				"--cluster-config-file", filepath.Join(dir, "nodes.conf"),
				"--cluster-node-timeout", strconv.FormatInt(clusterNodeTimeout.Milliseconds(), 10),
				"--save", "",
				"--appendonly", "no",
				"--repl-diskless-sync-delay", "0",
				"--daemonize", "no",
				"--dir", dir,
				"--logfile", filepath.Join(dir, "redis.log"),
			), cfg.serverArgs...), nil
		})
		if err != nil {
			t.Fatalf("redistest: cluster node %d: %v", i, err)
		}
		c.nodes = append(c.nodes, n)
	}

	args := append([]string{"--cluster", "create"}, c.Addrs()...)
	args = append(args, "--cluster-replicas", "1", "--cluster-yes")
	out, err := exec.CommandContext(ctx, cli, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("redistest: redis-cli --cluster create: %v\n%s", err, out)
	}
	if err := redisserver.Poll(ctx, "a healthy cluster", c.healthy); err != nil {
		t.Fatalf("%v\n%s", err, c.logTails())
	}
	announce(t, ModeProcess, "Redis Cluster: 6 server processes, "+bin+", "+build.String())
	t.Logf("redistest: cluster %v ready in %v", c.Addrs(), time.Since(begin).Round(time.Millisecond))
	return c
}

// Addrs returns the addresses of the 6 nodes, in creation order, killed ones included.
func (c *Cluster) Addrs() []string {
	return addrs(c.nodes)
}

// Client returns a rueidis cluster client whose InitAddress is every node that runs now,
// and closes it in t.Cleanup (before the cluster stops, cleanups running last-in
// first-out). Each opt edits the [rueidis.ClientOption] after InitAddress is set.
func (c *Cluster) Client(t testing.TB, opts ...func(*rueidis.ClientOption)) rueidis.Client {
	t.Helper()
	return newClient(t, rueidis.ClientOption{InitAddress: c.liveAddrs()}, opts, rueidis.ClientModeCluster)
}

// NodeClient returns a rueidis client bound to the one node at addr (ForceSingleClient, no
// redirects followed), closed in t.Cleanup: for node-local commands such as PUBSUB NUMSUB,
// SCRIPT FLUSH or INFO.
func (c *Cluster) NodeClient(t testing.TB, addr string, opts ...func(*rueidis.ClientOption)) rueidis.Client {
	t.Helper()
	c.node(t, addr)
	return newClient(t, nodeOption(addr), opts, "")
}

// MasterOf returns the address of the master that serves key's hash slot, once every
// running node agrees on it and it runs. During a failover it waits for the new master.
func (c *Cluster) MasterOf(t testing.TB, key string) string {
	t.Helper()
	slot := int(keys.Slot(key))
	var addr string
	c.wait(t, fmt.Sprintf("one live master for slot %d (key %q)", slot, key), func() error {
		v, err := c.agreedView()
		if err != nil {
			return err
		}
		owner := v.ownerOf(slot)
		if owner == nil {
			return fmt.Errorf("no node serves slot %d", slot)
		}
		if !c.running(owner.addr) {
			return fmt.Errorf("slot %d is served by %s, which does not run", slot, owner.addr)
		}
		addr = owner.addr
		return nil
	})
	return addr
}

// ReplicaOf returns the address of a running replica of the master at masterAddr whose
// replication link is up, waiting for one (at most 45 s).
func (c *Cluster) ReplicaOf(t testing.TB, masterAddr string) string {
	t.Helper()
	c.node(t, masterAddr)
	var addr string
	c.wait(t, "a live replica of "+masterAddr, func() error {
		v, err := c.agreedView()
		if err != nil {
			return err
		}
		m := v.byAddr[masterAddr]
		if m == nil || !m.master() {
			return fmt.Errorf("%s is not a master", masterAddr)
		}
		for _, e := range v.entries {
			if e.masterID == m.id && c.running(e.addr) {
				if err := linkUp(e.addr); err != nil {
					return err
				}
				addr = e.addr
				return nil
			}
		}
		return fmt.Errorf("%s has no running replica", masterAddr)
	})
	return addr
}

// Kill sends SIGKILL to the node at addr and returns once it has exited. Valid when the node
// runs or is paused. If it was a master, its replica is promoted about 2 s later.
func (c *Cluster) Kill(t testing.TB, addr string) {
	t.Helper()
	c.fault(t, "Kill", addr, []serverState{running, paused}, killed, func(ctx context.Context, n *node) error {
		return n.kill(ctx)
	})
}

// Restart starts the node at addr again, killing it first if it runs, on the same port with
// the same nodes.conf, and returns once it has rejoined and the cluster is healthy again (see
// [Cluster.WaitHealthy]). It holds no data: a killed master comes back as a replica of the
// node that replaced it, and syncs from it.
func (c *Cluster) Restart(t testing.TB, addr string) {
	t.Helper()
	c.fault(t, "Restart", addr, []serverState{running, paused, killed}, running, func(ctx context.Context, n *node) error {
		if err := n.restart(ctx); err != nil {
			return err
		}
		return redisserver.Poll(ctx, "a healthy cluster after restarting "+addr, c.healthy)
	})
}

// Pause freezes the node at addr (SIGSTOP) and returns once /proc shows it stopped. Other
// nodes flag it failing after the node timeout (1 s); a paused master is then replaced.
func (c *Cluster) Pause(t testing.TB, addr string) {
	t.Helper()
	c.fault(t, "Pause", addr, []serverState{running}, paused, func(ctx context.Context, n *node) error {
		return n.pause(ctx)
	})
}

// Resume thaws the node at addr (SIGCONT) and returns once it answers PING. It does not wait
// for the cluster to be healthy: call [Cluster.WaitHealthy] for that.
func (c *Cluster) Resume(t testing.TB, addr string) {
	t.Helper()
	c.fault(t, "Resume", addr, []serverState{paused}, running, func(ctx context.Context, n *node) error {
		return n.resume(ctx)
	})
}

// Failover sends CLUSTER FAILOVER (or CLUSTER FAILOVER FORCE) to the replica at replicaAddr
// and returns once that node is a master (ROLE) and the cluster is healthy: every running
// node reports cluster_state:ok and agrees on the slot owners, and the old master, if it
// runs, has become a replica with its link up. A graceful failover needs the old master
// running; FORCE does not wait for it.
func (c *Cluster) Failover(t testing.TB, replicaAddr string, force bool) {
	t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	n := c.node(t, replicaAddr)
	if st := n.getState(); st != running {
		t.Fatalf("redistest: Failover to %s cluster node %s: it must run", st, replicaAddr)
	}
	args := []string{"CLUSTER", "FAILOVER"}
	if force {
		args = append(args, "FORCE")
	}
	if role, err := nodeRole(replicaAddr); err != nil || role != "slave" {
		t.Fatalf("redistest: Failover to %s: ROLE is %q (%v), want a replica", replicaAddr, role, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), topologyTimeout)
	defer cancel()
	// A failover attempt can fail without an error: an election that gets too few votes
	// (masters vote for one shard at most once per 2 node timeouts), or one that wins but
	// loses a configEpoch collision right after an earlier failover of the same shard. The
	// command is sent again when the node is not master of a healthy cluster within
	// failoverRetry.
	var err error
	for attempt := 1; ctx.Err() == nil; attempt++ {
		if _, err := nodeCmd(replicaAddr, cmdTimeout, args...); err != nil {
			t.Fatalf("redistest: %s to %s (attempt %d): %v", strings.Join(args, " "), replicaAddr, attempt, err)
		}
		actx, acancel := context.WithTimeout(ctx, failoverRetry)
		err = redisserver.Poll(actx, replicaAddr+" to be master of a healthy cluster", func() error {
			if role, err := nodeRole(replicaAddr); err != nil || role != "master" {
				return fmt.Errorf("ROLE of %s is %q (%v)", replicaAddr, role, err)
			}
			return c.healthy()
		})
		acancel()
		if err == nil {
			return
		}
		t.Logf("redistest: %s to %s, attempt %d, not done after %v: %v", strings.Join(args, " "), replicaAddr, attempt, failoverRetry, err)
		if role, rerr := nodeRole(replicaAddr); rerr == nil && role == "master" {
			// Master already: only the cluster's health is pending; keep waiting for it.
			if err = redisserver.Poll(ctx, "a healthy cluster after failover to "+replicaAddr, c.healthy); err == nil {
				return
			}
		}
	}
	t.Fatalf("%v\n%s", err, c.logTails())
}

// failoverRetry is how long Failover waits for one CLUSTER FAILOVER to take effect before
// sending it again.
const failoverRetry = 4 * time.Second

// WaitHealthy returns once every running node reports cluster_state:ok with all 16384 slots
// ok, every running node agrees on which node serves each slot and sees the other running
// nodes connected and not failing, every slot is served by a running master, and every
// running replica's link to its master is up. Killed and paused nodes are ignored.
func (c *Cluster) WaitHealthy(t testing.TB) {
	t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	c.wait(t, "a healthy cluster", c.healthy)
}

// wait polls check for at most topologyTimeout and fails t with the nodes' log tails.
func (c *Cluster) wait(t testing.TB, what string, check func() error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), topologyTimeout)
	defer cancel()
	if err := redisserver.Poll(ctx, what, check); err != nil {
		t.Fatalf("%v\n%s", err, c.logTails())
	}
}

// node returns the node at addr or fails t.
func (c *Cluster) node(t testing.TB, addr string) *node {
	t.Helper()
	for _, n := range c.nodes {
		if n.addr == addr {
			return n
		}
	}
	t.Fatalf("redistest: %s is not a node of the cluster %v", addr, c.Addrs())
	return nil
}

// fault runs op on the node at addr under c.mu when its state is one of from, and moves it
// to to on success.
func (c *Cluster) fault(t testing.TB, name, addr string, from []serverState, to serverState, op func(context.Context, *node) error) {
	t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	n := c.node(t, addr)
	if st := n.getState(); !slices.Contains(from, st) {
		t.Fatalf("redistest: %s on %s cluster node %s: only valid when %v", name, st, addr, from)
	}
	ctx, cancel := context.WithTimeout(context.Background(), topologyTimeout)
	defer cancel()
	if err := op(ctx, n); err != nil {
		t.Fatalf("redistest: %s cluster node %s: %v\n%s", name, addr, err, c.logTails())
	}
	n.setState(to)
}

// running reports whether the node at addr runs (neither killed nor paused).
func (c *Cluster) running(addr string) bool {
	for _, n := range c.nodes {
		if n.addr == addr {
			return n.getState() == running
		}
	}
	return false
}

func (c *Cluster) liveAddrs() []string {
	var out []string
	for _, n := range c.nodes {
		if n.getState() == running {
			out = append(out, n.addr)
		}
	}
	return out
}

// healthy returns nil when the cluster is healthy as WaitHealthy defines it.
func (c *Cluster) healthy() error {
	v, err := c.agreedView()
	if err != nil {
		return err
	}
	for slot := range keys.SlotCount {
		o := v.ownerOf(slot)
		if o == nil {
			return fmt.Errorf("slot %d is not served", slot)
		}
		if !c.running(o.addr) {
			return fmt.Errorf("slot %d is served by %s, which does not run", slot, o.addr)
		}
	}
	for _, addr := range c.liveAddrs() {
		e := v.byAddr[addr]
		if e == nil {
			return fmt.Errorf("%s is unknown to the cluster", addr)
		}
		if e.flags["slave"] {
			if err := linkUp(addr); err != nil {
				return err
			}
		}
	}
	return nil
}

// agreedView asks every running node for CLUSTER INFO and CLUSTER NODES and returns the
// view they all share: each reports cluster_state:ok with all slots ok and knows every node,
// none flags a running node as failing or disconnected, and all agree on the role of every
// running node and on the owner of every slot.
func (c *Cluster) agreedView() (*clusterView, error) {
	var ref *clusterView
	var refAddr string
	live := c.liveAddrs()
	if len(live) == 0 {
		return nil, errors.New("no node runs")
	}
	for _, addr := range live {
		info, err := nodeCmd(addr, cmdTimeout, "CLUSTER", "INFO")
		if err != nil {
			return nil, fmt.Errorf("CLUSTER INFO on %s: %w", addr, err)
		}
		kv := parseInfo(asString(info))
		if kv["cluster_state"] != "ok" || kv["cluster_slots_ok"] != "16384" ||
			kv["cluster_known_nodes"] != strconv.Itoa(len(c.nodes)) {
			return nil, fmt.Errorf("%s: cluster_state:%s cluster_slots_ok:%s cluster_known_nodes:%s",
				addr, kv["cluster_state"], kv["cluster_slots_ok"], kv["cluster_known_nodes"])
		}
		raw, err := nodeCmd(addr, cmdTimeout, "CLUSTER", "NODES")
		if err != nil {
			return nil, fmt.Errorf("CLUSTER NODES on %s: %w", addr, err)
		}
		v, err := parseClusterNodes(asString(raw))
		if err != nil {
			return nil, fmt.Errorf("CLUSTER NODES on %s: %w", addr, err)
		}
		for _, other := range live {
			e := v.byAddr[other]
			switch {
			case e == nil:
				return nil, fmt.Errorf("%s does not know %s", addr, other)
			case e.flags["fail"] || e.flags["fail?"] || e.flags["handshake"] || e.flags["noaddr"]:
				return nil, fmt.Errorf("%s sees %s as %s", addr, other, e.rawFlags)
			case !e.flags["myself"] && e.link != "connected":
				return nil, fmt.Errorf("%s sees %s %s", addr, other, e.link)
			}
		}
		if ref == nil {
			ref, refAddr = v, addr
			continue
		}
		if a, b := ref.signature(live), v.signature(live); a != b {
			return nil, fmt.Errorf("nodes disagree: %s sees %s; %s sees %s", refAddr, a, addr, b)
		}
	}
	return ref, nil
}

// stop kills every node and removes the cluster's directory.
func (c *Cluster) stop() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	err := stopNodes(c.dir, c.nodes)
	waitRueidisDeferredCloses(rueidisCloseDelay + time.Second)
	if err != nil {
		return fmt.Errorf("redistest: stop cluster: %w", err)
	}
	return nil
}

// topologyDir makes the working directory of a multi-node deployment and registers stop,
// which must remove it, with t.Cleanup.
func topologyDir(t testing.TB, prefix string, stop func() error) string {
	t.Helper()
	dir, err := os.MkdirTemp("", prefix)
	if err != nil {
		t.Fatalf("redistest: %v", err)
	}
	t.Cleanup(func() {
		if err := stop(); err != nil {
			t.Errorf("%v", err)
		}
	})
	return dir
}

// addrs returns the addresses of nodes, in order.
func addrs(nodes []*node) []string {
	out := make([]string, len(nodes))
	for i, n := range nodes {
		out[i] = n.addr
	}
	return out
}

// stopNodes terminates nodes in order, then removes dir.
func stopNodes(dir string, nodes []*node) error {
	ctx, cancel := context.WithTimeout(context.Background(), topologyTimeout)
	defer cancel()
	var errs []error
	for _, n := range nodes {
		errs = append(errs, n.terminate(ctx))
	}
	return errors.Join(append(errs, os.RemoveAll(dir))...)
}

// rueidisCloseDelay is how long a rueidis cluster client waits before closing a connection
// that a topology refresh or a MOVED redirect replaced (rueidis v1.0.79, cluster.go: a
// goroutine that sleeps 5 s, then closes; Client.Close does not stop it).
const rueidisCloseDelay = 5 * time.Second

// waitRueidisDeferredCloses waits, at most d, until no goroutine of a rueidis cluster client
// sleeps before a deferred connection close, so that the leak check of [Main] does not flag
// these goroutines after a test that changed the topology. They hold no resource of the test
// and end by themselves; the wait only times the check.
func waitRueidisDeferredCloses(d time.Duration) {
	deadline := time.Now().Add(d)
	for rueidisClosePending() && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
}

func rueidisClosePending() bool {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	for g := range bytes.SplitSeq(buf, []byte("\n\n")) {
		if bytes.Contains(g, []byte("time.Sleep")) && bytes.Contains(g, []byte("github.com/redis/rueidis.(*clusterClient)")) {
			return true
		}
	}
	return false
}

func (c *Cluster) logTails() string { return logTails(c.nodes) }

// clusterView is one node's CLUSTER NODES.
type clusterView struct {
	entries []*clusterEntry
	byAddr  map[string]*clusterEntry
	byID    map[string]*clusterEntry
}

type clusterEntry struct {
	id       string
	addr     string
	rawFlags string
	flags    map[string]bool
	masterID string // "-" for a master
	link     string // connected or disconnected
	slots    [][2]int
}

func (e *clusterEntry) master() bool { return e.flags["master"] }

// parseClusterNodes parses CLUSTER NODES: one line per node,
// "<id> <ip:port@cport[,hostname]> <flags> <master> <ping> <pong> <epoch> <link> <slot>...".
func parseClusterNodes(s string) (*clusterView, error) {
	v := &clusterView{byAddr: map[string]*clusterEntry{}, byID: map[string]*clusterEntry{}}
	for line := range strings.SplitSeq(strings.TrimSpace(s), "\n") {
		f := strings.Fields(line)
		if len(f) < 8 {
			return nil, fmt.Errorf("short line %q", line)
		}
		addr, _, _ := strings.Cut(f[1], "@")
		e := &clusterEntry{id: f[0], addr: addr, rawFlags: f[2], flags: map[string]bool{}, masterID: f[3], link: f[7]}
		for fl := range strings.SplitSeq(f[2], ",") {
			e.flags[fl] = true
		}
		for _, r := range f[8:] {
			if strings.HasPrefix(r, "[") { // slot being imported or migrated
				continue
			}
			lo, hi, isRange := strings.Cut(r, "-")
			if !isRange {
				hi = lo
			}
			a, err1 := strconv.Atoi(lo)
			b, err2 := strconv.Atoi(hi)
			if err1 != nil || err2 != nil {
				return nil, fmt.Errorf("bad slot range %q in %q", r, line)
			}
			e.slots = append(e.slots, [2]int{a, b})
		}
		v.entries = append(v.entries, e)
		v.byAddr[addr] = e
		v.byID[e.id] = e
	}
	return v, nil
}

// ownerOf returns the master entry that serves slot, or nil.
func (v *clusterView) ownerOf(slot int) *clusterEntry {
	for _, e := range v.entries {
		if !e.master() {
			continue
		}
		for _, r := range e.slots {
			if slot >= r[0] && slot <= r[1] {
				return e
			}
		}
	}
	return nil
}

// signature describes the slot owners and the roles of the live nodes, for comparing views.
func (v *clusterView) signature(live []string) string {
	var parts []string
	for _, e := range v.entries {
		for _, r := range e.slots {
			if e.master() {
				parts = append(parts, fmt.Sprintf("%d-%d@%s", r[0], r[1], e.addr))
			}
		}
	}
	for _, addr := range live {
		e := v.byAddr[addr]
		if e == nil {
			parts = append(parts, addr+":unknown")
			continue
		}
		role := "master"
		if !e.master() {
			role = "replica-of-"
			if m := v.byID[e.masterID]; m != nil {
				role += m.addr
			}
		}
		parts = append(parts, addr+":"+role)
	}
	slices.Sort(parts)
	return strings.Join(parts, " ")
}

// --- processes -------------------------------------------------------------------------

// node is one redis-server (or sentinel) child process of a topology. Its state is one of
// running, paused, killed, terminated.
type node struct {
	*redisserver.Process
	addr string // the Process's Addr

	stateMu sync.Mutex
	state   serverState
}

func (n *node) getState() serverState {
	n.stateMu.Lock()
	defer n.stateMu.Unlock()
	return n.state
}

func (n *node) setState(s serverState) {
	n.stateMu.Lock()
	n.state = s
	n.stateMu.Unlock()
}

// startNode creates dir and starts in it a node whose argv argvFor builds from a port that
// ports picks; it retries with another port when the port was taken meanwhile. The node
// must log to dir/redis.log.
func startNode(ctx context.Context, ports *portPicker, dir string, argvFor func(port, dir string) ([]string, error)) (*node, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	p, err := redisserver.LaunchOnFreePort(ctx, ports.pick, func(port int) (redisserver.Spec, error) {
		argv, err := argvFor(strconv.Itoa(port), dir)
		return redisserver.Spec{Addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), Dir: dir, Argv: argv}, err
	})
	if err != nil {
		return nil, fmt.Errorf("redistest: %w", err)
	}
	return &node{Process: p, addr: p.Addr()}, nil
}

// restart kills the node if it runs and starts it again with the same argv.
func (n *node) restart(ctx context.Context) error {
	if err := n.Process.Restart(ctx); err != nil {
		n.setState(killed)
		return err
	}
	n.setState(running)
	return nil
}

func (n *node) kill(ctx context.Context) error {
	if err := n.Process.Kill(ctx); err != nil {
		return err
	}
	n.setState(killed)
	return nil
}

func (n *node) pause(ctx context.Context) error {
	if err := n.Process.Pause(ctx); err != nil {
		return err
	}
	n.setState(paused)
	return nil
}

func (n *node) resume(ctx context.Context) error {
	if err := n.Process.Resume(ctx); err != nil {
		return err
	}
	n.setState(running)
	return nil
}

func (n *node) terminate(ctx context.Context) error {
	err := n.Process.Stop(ctx)
	n.setState(terminated)
	return err
}

// logTails returns the end of every node's log, for failure messages.
func logTails(nodes []*node) string {
	var b strings.Builder
	for _, n := range nodes {
		fmt.Fprintf(&b, "--- %s (%s) log tail:\n%s\n", n.addr, n.getState(), n.LogTail())
	}
	return b.String()
}

func lookRedis(t testing.TB, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		t.Fatalf("redistest: %s not in PATH (apt-get install -y redis-server redis-tools): %v", name, err)
	}
	return p
}

// portPicker hands out free loopback ports, never the same one twice. With busOffset set
// (cluster nodes of a line without --cluster-port, whose bus listens on port+10000) it
// hands out only ports whose port+busOffset is a port, free too, and never handed out.
type portPicker struct {
	mu        sync.Mutex
	used      map[int]bool
	busOffset int
}

func newPortPicker() *portPicker { return &portPicker{used: map[int]bool{}} }

func (p *portPicker) pick() (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for range 100 {
		port, err := redisserver.FreePort()
		if err != nil {
			return 0, err
		}
		if p.used[port] {
			continue
		}
		if p.busOffset == 0 {
			p.used[port] = true
			return port, nil
		}
		bus := port + p.busOffset
		if bus > 65535 || p.used[bus] || !portFree(bus) {
			continue
		}
		p.used[port], p.used[bus] = true, true
		return port, nil
	}
	return 0, errors.New("redistest: no unused free port")
}

// portFree reports whether port can be listened on at 127.0.0.1 now.
func portFree(port int) bool {
	l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		return false
	}
	_ = l.Close()
	return true
}

// --- a minimal RESP2 client for the harness's own checks ---------------------------------

// respError is an error reply (-ERR ...).
type respError string

func (e respError) Error() string { return string(e) }

// nodeCmd sends one command to addr on a new connection and returns the reply: string,
// int64, nil, []any or an error value for nested errors. An error reply is returned as a
// respError. Every step is bounded by timeout, so a paused node fails fast.
func nodeCmd(addr string, timeout time.Duration, args ...string) (any, error) {
	conn, err := net.DialTimeout("tcp", addr, timeout)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	if err := conn.SetDeadline(time.Now().Add(timeout)); err != nil {
		return nil, err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
	}
	if _, err := io.WriteString(conn, b.String()); err != nil {
		return nil, err
	}
	v, err := readReply(bufio.NewReader(conn))
	if err != nil {
		return nil, err
	}
	if e, ok := v.(respError); ok {
		return nil, e
	}
	return v, nil
}

func readReply(r *bufio.Reader) (any, error) {
	line, err := r.ReadString('\n')
	if err != nil {
		return nil, err
	}
	line = strings.TrimSuffix(line, "\r\n")
	if line == "" {
		return nil, errors.New("empty reply line")
	}
	body := line[1:]
	switch line[0] {
	case '+':
		return body, nil
	case '-':
		return respError(body), nil
	case ':':
		return strconv.ParseInt(body, 10, 64)
	case '$':
		n, err := strconv.Atoi(body)
		if err != nil || n < 0 {
			return nil, err
		}
		buf := make([]byte, n+2)
		if _, err := io.ReadFull(r, buf); err != nil {
			return nil, err
		}
		return string(buf[:n]), nil
	case '*':
		n, err := strconv.Atoi(body)
		if err != nil || n < 0 {
			return nil, err
		}
		out := make([]any, n)
		for i := range out {
			if out[i], err = readReply(r); err != nil {
				return nil, err
			}
		}
		return out, nil
	}
	return nil, fmt.Errorf("unexpected reply %q", line)
}

func asString(v any) string {
	s, _ := v.(string)
	return s
}

// parseInfo parses INFO-style "key:value" lines.
func parseInfo(s string) map[string]string {
	kv := map[string]string{}
	for line := range strings.SplitSeq(s, "\n") {
		if k, v, ok := strings.Cut(strings.TrimSpace(line), ":"); ok {
			kv[k] = v
		}
	}
	return kv
}

// nodeRole returns the first element of ROLE at addr: "master", "slave" or "sentinel".
func nodeRole(addr string) (string, error) {
	v, err := nodeCmd(addr, cmdTimeout, "ROLE")
	if err != nil {
		return "", err
	}
	a, ok := v.([]any)
	if !ok || len(a) == 0 {
		return "", fmt.Errorf("ROLE replied %v", v)
	}
	return asString(a[0]), nil
}

// linkUp returns nil when the replica at addr reports master_link_status:up.
func linkUp(addr string) error {
	v, err := nodeCmd(addr, cmdTimeout, "INFO", "replication")
	if err != nil {
		return fmt.Errorf("INFO replication on %s: %w", addr, err)
	}
	kv := parseInfo(asString(v))
	if kv["role"] != "slave" {
		return fmt.Errorf("%s has role %s", addr, kv["role"])
	}
	if kv["master_link_status"] != "up" {
		return fmt.Errorf("%s: master_link_status:%s", addr, kv["master_link_status"])
	}
	return nil
}
