// Package javapeer drives a real Java Redisson process (integration/java, see its README.md)
// over a line protocol on stdin/stdout, so Go tests can check interop with Java RLocks.
//
// Typical use:
//
//	for _, v := range javapeer.KnownVersions {
//		t.Run("redisson"+v, func(t *testing.T) {
//			p := javapeer.Start(t, javapeer.JarPath(t, v), "redis://127.0.0.1:6379",
//				javapeer.WithWatchdog(3*time.Second))
//			r, err := p.Do(ctx, "A", "lock", "my-lock")
//			...
//		})
//	}
//
// Each owner name is a dedicated Java thread inside the peer, so Redisson sees one
// stable thread id per owner. Requests of one owner run in order; requests of
// different owners run concurrently. Do is safe for concurrent use.
package javapeer

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Reply is one answer from the peer.
type Reply struct {
	OK       bool          // "ok" reply
	Value    string        // the value of an ok reply ("-" for commands without a value)
	Err      string        // for an err reply: "CLASS MESSAGE", e.g. "java.lang.IllegalMonitorStateException attempt to unlock ..."
	ErrClass string        // for an err reply: the Java exception class, e.g. "java.lang.IllegalMonitorStateException"
	Elapsed  time.Duration // time the command took inside the JVM (not counting queueing behind the owner's earlier requests)
}

// Bool reports whether the value is "true".
func (r Reply) Bool() bool { return r.OK && r.Value == "true" }

// Int parses the value as an integer (0 if it is not one).
func (r Reply) Int() int64 {
	n, _ := strconv.ParseInt(r.Value, 10, 64)
	return n
}

func (r Reply) String() string {
	if r.OK {
		return fmt.Sprintf("ok %s (%v)", r.Value, r.Elapsed)
	}
	return fmt.Sprintf("err %s (%v)", r.Err, r.Elapsed)
}

type config struct {
	watchdog     time.Duration
	cluster      []string
	shardedMode  string
	startTimeout time.Duration
	logLevel     string
	javaArgs     []string
	username     string
	password     string
	caPEM        string
	group        []string
}

// Option configures Start.
type Option func(*config)

// WithWatchdog sets Redisson's lockWatchdogTimeout (default 30s in Redisson).
func WithWatchdog(d time.Duration) Option { return func(c *config) { c.watchdog = d } }

// WithCluster switches the peer to cluster mode with these node addresses
// (redis://host:port); the redisAddr given to Start is then ignored.
func WithCluster(nodes ...string) Option { return func(c *config) { c.cluster = nodes } }

// WithShardedSubscriptionMode sets Redisson's shardedSubscriptionMode in cluster mode:
// "AUTO" (Redisson's default), "ON" or "OFF". It needs WithCluster.
func WithShardedSubscriptionMode(mode string) Option {
	return func(c *config) { c.shardedMode = mode }
}

// WithAuth makes the peer log in as an ACL user (single server only).
func WithAuth(username, password string) Option {
	return func(c *config) { c.username, c.password = username, password }
}

// WithCA makes the peer trust only the CA certificates of a PEM file, for a rediss://
// address (single server only).
func WithCA(pemFile string) Option { return func(c *config) { c.caPEM = pemFile } }

// WithGroup gives the peer one more Redisson client per single-server address
// (redis://host:port), for its multilock.* and redlock.* commands.
func WithGroup(addrs ...string) Option { return func(c *config) { c.group = addrs } }

// WithStartTimeout bounds the wait for the peer's "ready" line (default 60s).
func WithStartTimeout(d time.Duration) Option { return func(c *config) { c.startTimeout = d } }

// WithLogLevel sets the peer's slf4j-simple level on stderr (default "warn").
func WithLogLevel(level string) Option { return func(c *config) { c.logLevel = level } }

// DefaultJVMArgs go before -jar: they roughly halve JVM start-up (C1 only, serial GC).
// WithJVMArgs adds to them; later -XX flags win.
var DefaultJVMArgs = []string{"-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC"}

// WithJVMArgs adds arguments before -jar (e.g. "-Xmx256m").
func WithJVMArgs(args ...string) Option {
	return func(c *config) { c.javaArgs = append(c.javaArgs, args...) }
}

// Peer is a running Java peer process.
type Peer struct {
	tb        testing.TB
	cmd       *exec.Cmd
	stderr    *tailBuffer
	startTime time.Duration

	wmu    sync.Mutex // serialises writes to stdin
	stdin  io.WriteCloser
	mu     sync.Mutex // guards the fields below
	nextID uint64
	wait   map[uint64]chan Reply
	dead   error         // set once the reader stops
	done   chan struct{} // closed when the reader stops
	exited chan struct{} // closed when the process has been reaped
}

// Start runs `java -jar jar` against redisAddr (e.g. "redis://127.0.0.1:6379"), waits for
// its "ready" line and registers a t.Cleanup that kills the process by pid. It fails the
// test if the peer does not become ready in time.
func Start(t testing.TB, jar string, redisAddr string, opts ...Option) *Peer {
	t.Helper()
	cfg := config{startTimeout: 60 * time.Second, logLevel: "warn"}
	for _, o := range opts {
		o(&cfg)
	}
	if cfg.shardedMode != "" && len(cfg.cluster) == 0 {
		t.Fatalf("javapeer: WithShardedSubscriptionMode(%q) needs WithCluster", cfg.shardedMode)
	}
	java := javaBinary(t)

	args := append(append([]string{}, DefaultJVMArgs...), cfg.javaArgs...)
	args = append(args, "-jar", jar, "--log-level="+cfg.logLevel)
	if len(cfg.cluster) > 0 {
		args = append(args, "--cluster="+strings.Join(cfg.cluster, ","))
		if cfg.shardedMode != "" {
			args = append(args, "--sharded-subscription-mode="+cfg.shardedMode)
		}
	} else {
		args = append(args, "--redis="+redisAddr)
		if cfg.username != "" {
			args = append(args, "--username="+cfg.username)
		}
		if cfg.password != "" {
			args = append(args, "--password="+cfg.password)
		}
		if cfg.caPEM != "" {
			args = append(args, "--ca-pem="+cfg.caPEM)
		}
	}
	if len(cfg.group) > 0 {
		args = append(args, "--group="+strings.Join(cfg.group, ","))
	}
	if cfg.watchdog > 0 {
		args = append(args, "--watchdog-ms="+strconv.FormatInt(cfg.watchdog.Milliseconds(), 10))
	}

	p := &Peer{
		tb:     t,
		stderr: &tailBuffer{max: 64 << 10},
		wait:   map[uint64]chan Reply{},
		done:   make(chan struct{}),
		exited: make(chan struct{}),
	}
	p.cmd = exec.Command(java, args...)
	p.cmd.Stderr = p.stderr
	// Don't let the environment silently change the peer's configuration.
	p.cmd.Env = filterEnv(os.Environ(), "PEER_")
	// Our own pipe rather than StdoutPipe: Wait must not close stdout before every reply is read.
	stdout, stdoutW, err := os.Pipe()
	if err != nil {
		t.Fatalf("javapeer: stdout pipe: %v", err)
	}
	p.cmd.Stdout = stdoutW
	if p.stdin, err = p.cmd.StdinPipe(); err != nil {
		t.Fatalf("javapeer: stdin pipe: %v", err)
	}
	begin := time.Now()
	err = p.cmd.Start()
	stdoutW.Close()
	if err != nil {
		stdout.Close()
		t.Fatalf("javapeer: start %s %s: %v", java, strings.Join(args, " "), err)
	}
	go func() {
		_ = p.cmd.Wait()
		close(p.exited)
	}()
	t.Cleanup(p.cleanup)

	ready := make(chan error, 1)
	go p.readLoop(stdout, ready)
	timer := time.NewTimer(cfg.startTimeout)
	defer timer.Stop()
	select {
	case err := <-ready:
		if err != nil {
			t.Fatalf("javapeer: %s did not start: %v\nstderr:\n%s", filepath.Base(jar), err, p.stderr.String())
		}
	case <-timer.C:
		t.Fatalf("javapeer: %s not ready after %v\nstderr:\n%s", filepath.Base(jar), cfg.startTimeout, p.stderr.String())
	}
	p.startTime = time.Since(begin)
	return p
}

// StartupTime is the time from starting the JVM to its "ready" line
// (JVM start + Redisson connecting to Redis).
func (p *Peer) StartupTime() time.Duration { return p.startTime }

// Pid is the process id of the JVM.
func (p *Peer) Pid() int { return p.cmd.Process.Pid }

// Stderr returns the last 64 KiB the peer wrote to stderr (Redisson warnings, stack traces).
func (p *Peer) Stderr() string { return p.stderr.String() }

// Do sends `ID OWNER CMD ARGS...` and waits for its reply. Owner commands: lock NAME [LEASE_MS],
// trylock NAME [WAIT_MS LEASE_MS], unlock NAME, forceunlock NAME, islocked NAME, isheld NAME,
// holdcount NAME, ttl NAME, incr KEY [SLEEP_MS], threadid. LEASE_MS -1 means watchdog. The
// lock commands run on another lock type as TYPE.CMD, TYPE one of fenced, spin, nonreentrant;
// fenced.lock and fenced.trylock reply the token (trylock: "null" when not acquired), and
// fenced.token NAME the latest token.
// With owner "" it sends a global command: clientid, ping, version, quit.
//
// A Java exception is a Reply with OK false, not an error; error is for transport problems
// (peer dead, ctx done, bad arguments). If ctx ends first, the request still runs in the
// peer (and keeps its owner busy); its reply is discarded.
func (p *Peer) Do(ctx context.Context, owner, cmd string, args ...string) (Reply, error) {
	words := append([]string{owner, cmd}, args...)
	if owner == "" {
		words = words[1:]
		if len(args) > 0 {
			return Reply{}, fmt.Errorf("javapeer: global command %q takes no arguments", cmd)
		}
	}
	for _, w := range words {
		if w == "" || strings.ContainsAny(w, " \t\r\n") {
			return Reply{}, fmt.Errorf("javapeer: invalid word %q in request %q", w, words)
		}
	}

	ch := make(chan Reply, 1)
	p.mu.Lock()
	if p.dead != nil {
		err := p.dead
		p.mu.Unlock()
		return Reply{}, err
	}
	p.nextID++
	id := p.nextID
	p.wait[id] = ch
	p.mu.Unlock()

	line := strconv.FormatUint(id, 10) + " " + strings.Join(words, " ") + "\n"
	p.wmu.Lock()
	_, err := io.WriteString(p.stdin, line)
	p.wmu.Unlock()
	if err != nil {
		p.forget(id)
		return Reply{}, fmt.Errorf("javapeer: write request: %w (%v)", err, p.deadErr())
	}

	select {
	case r := <-ch:
		return r, nil
	case <-p.done:
		select { // the reply may have raced with the reader stopping
		case r := <-ch:
			return r, nil
		default:
		}
		return Reply{}, p.deadErr()
	case <-ctx.Done():
		p.forget(id)
		return Reply{}, fmt.Errorf("javapeer: %s: %w", strings.TrimSpace(line), ctx.Err())
	}
}

// Must is Do that fails t on a transport error or an err reply, returning the value.
// Call it from t's goroutine.
func (p *Peer) Must(t testing.TB, ctx context.Context, owner, cmd string, args ...string) string {
	t.Helper()
	r, err := p.Do(ctx, owner, cmd, args...)
	if err != nil {
		t.Fatalf("javapeer: %s %s %v: %v", owner, cmd, args, err)
	}
	if !r.OK {
		t.Fatalf("javapeer: %s %s %v: %s", owner, cmd, args, r.Err)
	}
	return r.Value
}

// ClientID returns the Redisson client UUID: lock-holder hash fields are "<ClientID>:<threadid>".
func (p *Peer) ClientID(ctx context.Context) (string, error) {
	r, err := p.Do(ctx, "", "clientid")
	if err != nil {
		return "", err
	}
	if !r.OK {
		return "", errors.New(r.Err)
	}
	return r.Value, nil
}

// Kill sends SIGKILL to the JVM (simulating a crash: held locks stay until their TTL runs
// out) and waits for it to exit. Safe to call more than once.
func (p *Peer) Kill() {
	_ = p.cmd.Process.Kill()
	<-p.exited
}

func (p *Peer) cleanup() {
	p.Kill()
	if p.tb.Failed() {
		if s := p.stderr.String(); s != "" {
			p.tb.Logf("javapeer: pid %d stderr:\n%s", p.cmd.Process.Pid, s)
		}
	}
}

func (p *Peer) forget(id uint64) {
	p.mu.Lock()
	delete(p.wait, id)
	p.mu.Unlock()
}

func (p *Peer) deadErr() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.dead != nil {
		return p.dead
	}
	return errors.New("javapeer: peer is running")
}

func (p *Peer) readLoop(stdout io.ReadCloser, ready chan<- error) {
	defer stdout.Close()
	sc := bufio.NewScanner(stdout)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	isReady := false
	for sc.Scan() {
		line := sc.Text()
		if !isReady {
			if line == "ready" {
				isReady = true
				ready <- nil
			}
			continue
		}
		id, r, ok := parseReply(line)
		if !ok {
			continue // not a reply; the peer keeps stdout for replies, so this should not happen
		}
		p.mu.Lock()
		ch := p.wait[id]
		delete(p.wait, id)
		p.mu.Unlock()
		if ch != nil {
			ch <- r
		}
	}
	err := sc.Err()
	if err == nil {
		err = io.EOF
	}
	<-p.exited // let Wait fill in the exit status
	err = fmt.Errorf("javapeer: peer pid %d stopped (%v, %v); stderr tail:\n%s",
		p.cmd.Process.Pid, err, p.cmd.ProcessState, lastLines(p.stderr.String(), 20))
	if !isReady {
		ready <- err
	}
	p.mu.Lock()
	p.dead = err
	p.mu.Unlock()
	close(p.done)
}

// parseReply parses "ID ok VALUE ELAPSED_US" or "ID err CLASS [MESSAGE...] ELAPSED_US".
func parseReply(line string) (uint64, Reply, bool) {
	f := strings.Fields(line)
	if len(f) < 4 {
		return 0, Reply{}, false
	}
	id, err1 := strconv.ParseUint(f[0], 10, 64)
	us, err2 := strconv.ParseInt(f[len(f)-1], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, Reply{}, false
	}
	r := Reply{Elapsed: time.Duration(us) * time.Microsecond}
	switch f[1] {
	case "ok":
		if len(f) != 4 {
			return 0, Reply{}, false
		}
		r.OK, r.Value = true, f[2]
	case "err":
		r.ErrClass = f[2]
		r.Err = strings.Join(f[2:len(f)-1], " ")
	default:
		return 0, Reply{}, false
	}
	return id, r, true
}

// JarPath returns the path of the built peer jar for a Redisson version ("4.7.0"; see
// KnownVersions). If the jar or java is missing it fails the test when $CI is set and
// skips it otherwise, naming the build command.
func JarPath(t testing.TB, version string) string {
	t.Helper()
	javaBinary(t)
	p := filepath.Join(TargetDir(), "peer-"+version+".jar")
	st, err := os.Stat(p)
	if err != nil {
		missing(t, "javapeer: %s not built (%v); build it with: %s", p, err, BuildCommand(version))
	}
	if src := newerSource(st.ModTime()); src != "" {
		missing(t, "javapeer: %s is older than %s; rebuild it with: %s", p, src, BuildCommand(version))
	}
	return p
}

// newerSource returns a file of the Maven project (pom.xml, src/...) modified after t, or "".
func newerSource(t time.Time) string {
	newer := ""
	check := func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if info, err := d.Info(); err == nil && info.ModTime().After(t) {
				newer = path
				return fs.SkipAll
			}
		}
		return nil
	}
	_ = filepath.WalkDir(filepath.Join(JavaDir(), "pom.xml"), check)
	if newer == "" {
		_ = filepath.WalkDir(filepath.Join(JavaDir(), "src"), check)
	}
	return newer
}

// Versions lists the Redisson versions whose jars are built, e.g. ["3.52.0", "4.7.0"].
func Versions() []string {
	m, _ := filepath.Glob(filepath.Join(TargetDir(), "peer-*.jar"))
	var vs []string
	for _, f := range m {
		vs = append(vs, strings.TrimSuffix(strings.TrimPrefix(filepath.Base(f), "peer-"), ".jar"))
	}
	sort.Strings(vs)
	return vs
}

// BuildCommand is the shell command that builds the jar for a Redisson version.
func BuildCommand(version string) string {
	return "cd " + JavaDir() + " && ./build.sh " + version
}

// JavaDir is integration/java, the Maven project. $JAVAPEER_DIR overrides it.
func JavaDir() string {
	if d := os.Getenv("JAVAPEER_DIR"); d != "" {
		return d
	}
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "java")
}

// TargetDir is where the jars are built: JavaDir()/target.
func TargetDir() string { return filepath.Join(JavaDir(), "target") }

func javaBinary(t testing.TB) string {
	t.Helper()
	java, err := exec.LookPath("java")
	if err != nil {
		missing(t, "javapeer: java not found in PATH: %v", err)
	}
	return java
}

func missing(t testing.TB, format string, args ...any) {
	t.Helper()
	if os.Getenv("CI") != "" {
		t.Fatalf(format, args...)
	}
	t.Skipf(format, args...)
}

func filterEnv(env []string, prefix string) []string {
	out := env[:0:0]
	for _, kv := range env {
		if !strings.HasPrefix(kv, prefix) {
			out = append(out, kv)
		}
	}
	return out
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	buf bytes.Buffer
}

func (b *tailBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf.Write(p)
	if over := b.buf.Len() - b.max; over > 0 {
		b.buf.Next(over)
	}
	return len(p), nil
}

func (b *tailBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
