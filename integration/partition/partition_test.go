package partition

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/rueidis"
)

// watchdog is the clients' WatchdogTimeout: short, so that leases run out within a run.
const watchdog = 2 * time.Second

// runFor is how long the clients of one scenario run: GOREDISSON_PARTITION_RUN (a Go
// duration) for a long run, else a short one.
func runFor(t *testing.T) time.Duration {
	if s := os.Getenv("GOREDISSON_PARTITION_RUN"); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil {
			t.Fatalf("GOREDISSON_PARTITION_RUN: %v", err)
		}
		return d
	}
	return 12 * time.Second
}

// cluster is what a scenario's clients lock on: servers each in a host of their own.
type cluster struct {
	tp      *topology
	servers []string // host names
	procs   map[string]*exec.Cmd
	dir     string
}

// startServers starts n redis-servers, each in a host namespace of its own, without
// persistence, and returns once each answers PING from the test's namespace.
func startServers(t *testing.T, tp *topology, n int) *cluster {
	t.Helper()
	c := &cluster{tp: tp, procs: map[string]*exec.Cmd{}, dir: t.TempDir()}
	for i := range n {
		name := fmt.Sprintf("s%d", i+1)
		tp.host(name)
		c.servers = append(c.servers, name)
		c.start(t, name)
	}
	t.Cleanup(func() {
		for _, p := range c.procs {
			stopProcess(p)
		}
	})
	return c
}

func (c *cluster) addr(name string) string { return net.JoinHostPort(c.tp.hosts[name], "6379") }

func (c *cluster) addrs() []string {
	var out []string
	for _, s := range c.servers {
		out = append(out, c.addr(s))
	}
	return out
}

// start starts server name (again, after kill: empty, as without persistence) with the
// extra arguments args.
func (c *cluster) start(t *testing.T, name string, args ...string) {
	t.Helper()
	dir := filepath.Join(c.dir, name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := c.tp.command(name, "redis-server", "--bind", c.tp.hosts[name], "--port", "6379",
		"--save", "", "--appendonly", "no", "--protected-mode", "no", "--dir", dir,
		"--logfile", filepath.Join(dir, "redis.log"))
	cmd.Args = append(cmd.Args, args...)
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	c.procs[name] = cmd
	rc, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{c.addr(name)}, DisableRetry: true,
		Dialer: net.Dialer{Timeout: time.Second}})
	for deadline := time.Now().Add(10 * time.Second); err != nil; rc, err = rueidis.NewClient(rueidis.ClientOption{
		InitAddress: []string{c.addr(name)}, DisableRetry: true, Dialer: net.Dialer{Timeout: time.Second}}) {
		if time.Now().After(deadline) {
			t.Fatalf("server %s at %s did not answer: %v", name, c.addr(name), err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	rc.Close()
}

// kill ends server name with SIGKILL.
func (c *cluster) kill(name string) {
	if p := c.procs[name]; p != nil {
		stopProcess(p)
		delete(c.procs, name)
	}
}

// stopProcess kills p (a process this test started) and reaps it.
func stopProcess(p *exec.Cmd) {
	_ = p.Process.Kill()
	_ = p.Wait()
}

// client is one lockclient process in a host of its own.
type client struct {
	name   string
	cmd    *exec.Cmd
	stderr bytes.Buffer
	mu     sync.Mutex
	events []event
	done   chan struct{}
}

// event is one line of a client's history (see lockclient).
type event struct {
	Client string `json:"c"`
	Op     string `json:"op"`
	Type   string `json:"t"`
	Seq    int    `json:"seq"`
	At     int64  `json:"at"`
	Token  int64  `json:"tok"`
	Err    string `json:"err,omitempty"`
}

// binDir holds the lockclient binary; TestMain removes it.
var binDir string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "goredisson-partition-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binDir = dir
	code := m.Run()
	_ = os.RemoveAll(dir)
	os.Exit(code)
}

var buildOnce = sync.OnceValues(func() (string, error) {
	bin := filepath.Join(binDir, "lockclient")
	out, err := exec.Command("go", "build", "-o", bin, "github.com/goredisson/goredisson/integration/partition/lockclient").CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("go build lockclient: %v: %s", err, out)
	}
	return bin, nil
})

// startClient starts lockclient in host name with args.
func startClient(t *testing.T, tp *topology, name string, args ...string) *client {
	t.Helper()
	bin, err := buildOnce()
	if err != nil {
		t.Fatal(err)
	}
	c := &client{name: name, done: make(chan struct{})}
	c.cmd = tp.command(name, append([]string{bin, "-id", name}, args...)...)
	c.cmd.Stderr = &c.stderr
	out, err := c.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := c.cmd.Start(); err != nil {
		t.Fatalf("start client %s: %v", name, err)
	}
	go func() {
		defer close(c.done)
		in := bufio.NewScanner(out)
		for in.Scan() {
			var e event
			if json.Unmarshal(in.Bytes(), &e) == nil {
				c.mu.Lock()
				c.events = append(c.events, e)
				c.mu.Unlock()
			}
		}
	}()
	t.Cleanup(func() {
		_ = c.cmd.Process.Signal(syscall.SIGCONT)
		_ = c.cmd.Process.Kill()
		<-c.done
		_ = c.cmd.Wait()
	})
	return c
}

// wait waits for the client to end by itself, at most d.
func (c *client) wait(t *testing.T, d time.Duration) {
	t.Helper()
	select {
	case <-c.done:
		if err := c.cmd.Wait(); err != nil {
			t.Errorf("client %s: %v: %s", c.name, err, c.stderr.String())
		}
	case <-time.After(d):
		_ = c.cmd.Process.Signal(syscall.SIGCONT)
		t.Errorf("client %s did not end in %v", c.name, d)
	}
}

// fault is injected, over and over, while a scenario's clients run.
type fault struct {
	name string
	// inject starts the fault on a victim and returns what ends it.
	inject func(t *testing.T, s *scenario, victim int) (heal func())
}

// sentinelConfig names the configuration of a master, two replicas and three Sentinels.
const sentinelConfig = "Sentinel: master, 2 replicas, 3 Sentinels"

// scenario is one run: a configuration of servers, a lock type, clients and a fault.
type scenario struct {
	config string // "single server", "RedLock, 5 servers"
	kind   string // lockclient -type
	fault  fault
	tp     *topology
	srv    *cluster
	res    *resource
	cls    []*client
}

// outcome is what a scenario's run recorded.
type outcome struct {
	config, kind, fault string
	acquired, failed    int
	unknown             int
	accepted, refused   int
	lost                int
	violations          []string
	tokenErrors         []string
}

// run starts the topology and the clients, injects the fault every few seconds on a
// random client or server until the clients end, and checks the history.
func (s *scenario) run(t *testing.T, servers, clients int) outcome {
	s.tp = newTopology(t)
	if s.config == sentinelConfig {
		s.srv = startSentinel(t, s.tp)
	} else {
		s.srv = startServers(t, s.tp, servers)
	}
	s.res = startResource(t, subnet+"1")
	d := runFor(t)
	args := []string{"-type", s.kind, "-resource", s.res.addr(), "-duration", d.String(),
		"-watchdog", watchdog.String(), "-name", "partition:" + strings.ReplaceAll(t.Name(), "/", ":")}
	switch {
	case s.config == sentinelConfig:
		args = append(args, sentinelArgs(s.srv)...)
	case s.kind == "redlock":
		args = append(args, "-redis", strings.Join(s.srv.addrs(), ","))
	default:
		args = append(args, "-redis", s.srv.addrs()[0])
	}
	for i := range clients {
		s.tp.host(fmt.Sprintf("c%d", i+1))
	}
	for i := range clients {
		s.cls = append(s.cls, startClient(t, s.tp, fmt.Sprintf("c%d", i+1), args...))
	}
	end := time.Now().Add(d)
	ctx, cancel := context.WithDeadline(context.Background(), end)
	defer cancel()
	for ctx.Err() == nil {
		pause(ctx, 1500*time.Millisecond)
		if ctx.Err() != nil {
			break
		}
		heal := s.fault.inject(t, s, s.holder(ctx, clients))
		pause(ctx, 2*watchdog+watchdog/2)
		heal()
	}
	for _, c := range s.cls {
		c.wait(t, 30*time.Second)
	}
	return s.check()
}

// holder returns the index of a client that holds the lock now by its history (acquired,
// not yet releasing), waiting up to a second for one; else a random client.
func (s *scenario) holder(ctx context.Context, clients int) int {
	for end := time.Now().Add(time.Second); time.Now().Before(end) && ctx.Err() == nil; {
		for i, c := range s.cls {
			if c.holding() {
				return i
			}
		}
		pause(ctx, 5*time.Millisecond)
	}
	return rand.IntN(clients)
}

// holding reports whether c's last acquisition succeeded and its release has not started.
func (c *client) holding() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i := len(c.events) - 1; i >= 0; i-- {
		e := c.events[i]
		switch {
		case e.Op == "release" || e.Op == "lost":
			return false
		case e.Op == "acquire" && e.Type == "ok":
			return true
		case e.Op == "acquire":
			return false
		}
	}
	return false
}

// check reads the clients' histories and the resource's record.
func (s *scenario) check() outcome {
	o := outcome{config: s.config, kind: s.kind, fault: s.fault.name}
	var tokens []event
	for _, c := range s.cls {
		c.mu.Lock()
		last := int64(0)
		for _, e := range c.events {
			switch {
			case e.Op == "acquire" && e.Type == "ok":
				o.acquired++
				if e.Token != 0 {
					tokens = append(tokens, e)
					if e.Token <= last {
						o.tokenErrors = append(o.tokenErrors, fmt.Sprintf("%s#%d token %d after %d", e.Client, e.Seq, e.Token, last))
					}
					last = e.Token
				}
			case e.Op == "acquire" && e.Type == "fail":
				o.failed++
			case e.Op == "acquire" && e.Type == "info":
				o.unknown++
			case e.Op == "lost":
				o.lost++
			}
		}
		c.mu.Unlock()
	}
	seen := map[int64]event{}
	for _, e := range tokens {
		if p, dup := seen[e.Token]; dup {
			o.tokenErrors = append(o.tokenErrors, fmt.Sprintf("token %d given to %s#%d and %s#%d", e.Token, p.Client, p.Seq, e.Client, e.Seq))
		}
		seen[e.Token] = e
	}
	o.accepted, o.refused = s.res.counts()
	o.violations = s.res.overlaps()
	return o
}

func pause(ctx context.Context, d time.Duration) {
	tm := time.NewTimer(d)
	defer tm.Stop()
	select {
	case <-tm.C:
	case <-ctx.Done():
	}
}
