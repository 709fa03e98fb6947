package bench

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"math"
	"net"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/require"

	"github.com/goredisson/goredisson/internal/redistest"
)

// opTimeout bounds every single control command of the measurements.
const opTimeout = 10 * time.Second

// namedClient returns a rueidis client on srv whose connections carry CLIENT SETNAME name,
// so that CLIENT LIST and MONITOR lines can be attributed to it. Closed in t.Cleanup.
func namedClient(t testing.TB, srv *redistest.Server, name string) rueidis.Client {
	t.Helper()
	return srv.Client(t, func(o *rueidis.ClientOption) { o.ClientName = name })
}

// do runs one command with opTimeout.
func do(rc rueidis.Client, cmd rueidis.Completed) rueidis.RedisResult {
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	return rc.Do(ctx, cmd)
}

// --- statistics -------------------------------------------------------------------------

// durs is a sample of durations.
type durs []time.Duration

// sorted returns a sorted copy.
func (d durs) sorted() durs { s := slices.Clone(d); slices.Sort(s); return s }

// pct returns the nearest-rank q-quantile (0 < q <= 1) of d; 0 for an empty sample.
func (d durs) pct(q float64) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := d.sorted()
	i := int(math.Ceil(q*float64(len(s)))) - 1
	return s[min(max(i, 0), len(s)-1)]
}

func (d durs) mean() time.Duration {
	if len(d) == 0 {
		return 0
	}
	var sum time.Duration
	for _, x := range d {
		sum += x
	}
	return sum / time.Duration(len(d))
}

func (d durs) max() time.Duration {
	if len(d) == 0 {
		return 0
	}
	return slices.Max(d)
}

func (d durs) min() time.Duration {
	if len(d) == 0 {
		return 0
	}
	return slices.Min(d)
}

// us formats d in microseconds with one decimal.
func us(d time.Duration) string { return fmt.Sprintf("%.1f µs", float64(d)/float64(time.Microsecond)) }

// ms formats d in milliseconds with two decimals.
func ms(d time.Duration) string { return fmt.Sprintf("%.2f ms", float64(d)/float64(time.Millisecond)) }

// goal renders a goal check as text: these are measurements, never test failures.
func goal(ok bool) string {
	if ok {
		return "met"
	}
	return "NOT MET"
}

// --- process and server resources ---------------------------------------------------------

// cpuTime returns the user+system CPU time this process has used (getrusage RUSAGE_SELF;
// redis-server children are not included).
func cpuTime(t testing.TB) time.Duration {
	t.Helper()
	var ru syscall.Rusage
	require.NoError(t, syscall.Getrusage(syscall.RUSAGE_SELF, &ru))
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// heapAfterGC returns HeapAlloc after two full collections.
func heapAfterGC() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// reportCPU reports this process's CPU time since cpu0 (cpuTime) per op of b, as
// cpu-ns/op: on a machine with few cores it varies less from run to run than wall time.
func reportCPU(b *testing.B, cpu0 time.Duration) { reportPerOp(b, cpuTime(b)-cpu0, "cpu-ns/op") }

// reportPerOp reports d per op of b as the metric unit.
func reportPerOp(b *testing.B, d time.Duration, unit string) {
	b.ReportMetric(float64(d.Nanoseconds())/float64(b.N), unit)
}

// serverCPU returns redis-server's used_cpu_user+used_cpu_sys from INFO cpu.
func serverCPU(t testing.TB, rc rueidis.Client) time.Duration {
	t.Helper()
	info, err := do(rc, rc.B().Info().Section("cpu").Build()).ToString()
	require.NoError(t, err)
	var total float64
	for _, line := range strings.Split(info, "\n") {
		k, v, ok := strings.Cut(strings.TrimSpace(line), ":")
		if ok && (k == "used_cpu_user" || k == "used_cpu_sys") {
			f, err := strconv.ParseFloat(v, 64)
			require.NoError(t, err)
			total += f
		}
	}
	return time.Duration(total * float64(time.Second))
}

// serverInfo returns one field of INFO server, e.g. redis_version.
func serverInfo(t testing.TB, rc rueidis.Client, field string) string {
	t.Helper()
	info, err := do(rc, rc.B().Info().Section("server").Build()).ToString()
	require.NoError(t, err)
	for _, line := range strings.Split(info, "\n") {
		if k, v, ok := strings.Cut(strings.TrimSpace(line), ":"); ok && k == field {
			return v
		}
	}
	return "?"
}

// goroutinePeak samples runtime.NumGoroutine every 2 ms until stop is called, which returns
// the largest value seen.
func goroutinePeak() (stop func() int) {
	done := make(chan struct{})
	res := make(chan int, 1)
	go func() {
		peak := runtime.NumGoroutine()
		tk := time.NewTicker(2 * time.Millisecond)
		defer tk.Stop()
		for {
			select {
			case <-done:
				res <- peak
				return
			case <-tk.C:
				peak = max(peak, runtime.NumGoroutine())
			}
		}
	}()
	return func() int { close(done); return <-res }
}

// --- Redis observations ------------------------------------------------------------------

// numsub returns PUBSUB NUMSUB of channel, with opTimeout.
func numsub(rc rueidis.Client, channel string) (int64, error) {
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	return redistest.NumSubOf(ctx, rc, channel)
}

// clientConn is one line of CLIENT LIST.
type clientConn = redistest.ClientConn

// clientList returns CLIENT LIST, parsed.
func clientList(rc rueidis.Client) ([]clientConn, error) {
	return parseClientList(do(rc, rc.B().ClientList().Build()))
}

// parseClientList parses the reply of a CLIENT LIST command.
func parseClientList(res rueidis.RedisResult) ([]clientConn, error) {
	s, err := res.ToString()
	if err != nil {
		return nil, err
	}
	return redistest.ParseClientList(s), nil
}

// cmdStats returns INFO commandstats as command → calls ("evalsha", "pubsub|numsub"), with
// opTimeout; it may run off the test's goroutine.
func cmdStats(rc rueidis.Client) (map[string]int64, error) {
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	return redistest.CommandStats(ctx, rc)
}

// commandStats is cmdStats for the test's goroutine: it fails the test on error.
func commandStats(t testing.TB, rc rueidis.Client) map[string]int64 {
	t.Helper()
	stats, err := cmdStats(rc)
	require.NoError(t, err)
	return stats
}

// --- MONITOR ----------------------------------------------------------------------------

// monitor reads MONITOR on its own raw connection, so that every command can be
// attributed to the connection (and so the named client) that sent it.
type monitor struct {
	conn net.Conn
	mu   sync.Mutex
	cmds []monitored
	done chan struct{}
	err  error
}

// monitored is one MONITOR line: the sender ("lua" for commands run by scripts) and the
// command name, lower case, with the subcommand of container commands ("pubsub|numsub").
type monitored struct {
	from, cmd, arg1 string
}

// containers are the commands that INFO commandstats reports per subcommand.
var containers = map[string]bool{"pubsub": true, "client": true, "config": true, "script": true,
	"cluster": true, "command": true, "function": true, "memory": true, "object": true,
	"xinfo": true, "acl": true, "latency": true, "module": true, "slowlog": true}

func startMonitor(t testing.TB, addr string) *monitor {
	t.Helper()
	conn, err := net.DialTimeout("tcp", addr, opTimeout)
	require.NoError(t, err)
	_, err = conn.Write([]byte("MONITOR\r\n"))
	require.NoError(t, err)
	r := bufio.NewReader(conn)
	line, err := r.ReadString('\n')
	require.NoError(t, err)
	require.Equal(t, "+OK", strings.TrimSpace(line))
	m := &monitor{conn: conn, done: make(chan struct{})}
	go func() {
		defer close(m.done)
		for {
			line, err := r.ReadString('\n')
			if err != nil {
				m.err = err
				return
			}
			if c, ok := parseMonitor(strings.TrimRight(line, "\r\n")); ok {
				m.mu.Lock()
				m.cmds = append(m.cmds, c)
				m.mu.Unlock()
			}
		}
	}()
	t.Cleanup(func() { _ = conn.Close(); <-m.done })
	return m
}

// stopAt waits until the ECHO marker sent by the caller has been seen (MONITOR keeps the
// server's order, so every earlier command has been read), closes the connection and
// returns the commands read before the marker.
func (m *monitor) stopAt(t testing.TB, marker string) []monitored {
	t.Helper()
	deadline := time.Now().Add(opTimeout)
	for {
		m.mu.Lock()
		i := slices.IndexFunc(m.cmds, func(c monitored) bool { return c.cmd == "echo" && c.arg1 == marker })
		var out []monitored
		if i >= 0 {
			out = slices.Clone(m.cmds[:i])
		}
		m.mu.Unlock()
		if i >= 0 {
			_ = m.conn.Close()
			<-m.done
			return out
		}
		select {
		case <-m.done:
			t.Fatalf("MONITOR connection ended before marker %q: %v", marker, m.err)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("MONITOR: marker %q not seen within %v", marker, opTimeout)
		}
		time.Sleep(time.Millisecond)
	}
}

// parseMonitor parses `+1712345678.123456 [0 127.0.0.1:5555] "EVALSHA" "ab..." ...`.
func parseMonitor(line string) (monitored, bool) {
	open, closing := strings.IndexByte(line, '['), strings.IndexByte(line, ']')
	if !strings.HasPrefix(line, "+") || open < 0 || closing < open {
		return monitored{}, false
	}
	_, from, _ := strings.Cut(line[open+1:closing], " ")
	args := quoted(line[closing+1:], 2)
	if len(args) == 0 {
		return monitored{}, false
	}
	c := monitored{from: from, cmd: strings.ToLower(args[0])}
	if len(args) > 1 {
		c.arg1 = args[1]
		if containers[c.cmd] {
			c.cmd += "|" + strings.ToLower(args[1])
		}
	}
	return c, true
}

// quoted returns the first n double-quoted tokens of s, with backslash escapes kept
// verbatim (command and subcommand names never have any).
func quoted(s string, n int) []string {
	var out []string
	for len(out) < n {
		i := strings.IndexByte(s, '"')
		if i < 0 {
			break
		}
		s = s[i+1:]
		j := 0
		for j < len(s) && s[j] != '"' {
			if s[j] == '\\' {
				j++
			}
			j++
		}
		if j > len(s) {
			break
		}
		out = append(out, s[:j])
		if j >= len(s) {
			break
		}
		s = s[j+1:]
	}
	return out
}

// byClient counts monitored commands per client name (via addr → name from CLIENT LIST;
// "lua" for commands run inside scripts, "?" for an address no longer listed).
func byClient(cmds []monitored, conns []clientConn) map[string]map[string]int64 {
	names := map[string]string{}
	for _, c := range conns {
		names[c.Addr] = c.Name
	}
	out := map[string]map[string]int64{}
	for _, c := range cmds {
		who := c.from
		if who != "lua" {
			if n, ok := names[who]; ok && n != "" {
				who = n
			} else {
				who = "?" + who
			}
		}
		if out[who] == nil {
			out[who] = map[string]int64{}
		}
		out[who][c.cmd]++
	}
	return out
}

// --- naive renewal ---------------------------------------------------------------------

// naiveRenewScript renews one lock: HEXISTS, then PEXPIRE while the field holds it.
var naiveRenewScript = rueidis.NewLuaScriptRetryable(`
if redis.call('hexists', KEYS[1], ARGV[2]) == 1 then
	redis.call('pexpire', KEYS[1], ARGV[1])
	return 1
end
return 0
`)

// naiveRenewer is the baseline the wheel is compared with: one time.AfterFunc per held
// lock, each renewing its own lock with its own script call every interval.
type naiveRenewer struct {
	rc       rueidis.Client
	interval time.Duration
	timeout  time.Duration // per call: the lease, after which a renewal is useless
	leaseMs  string

	mu     sync.RWMutex
	closed bool
	locks  []*naiveLock
	wg     sync.WaitGroup

	calls, renewed, failed, lost atomic.Uint64
	spans                        spanLog
}

type naiveLock struct {
	r           *naiveRenewer
	name, field string
	t           *time.Timer
	gone        atomic.Bool
}

// active returns how many locks are still being renewed.
func (r *naiveRenewer) active() int {
	r.mu.RLock()
	defer r.mu.RUnlock()
	n := 0
	for _, l := range r.locks {
		if !l.gone.Load() {
			n++
		}
	}
	return n
}

func newNaiveRenewer(rc rueidis.Client, lease time.Duration, spans int) *naiveRenewer {
	return &naiveRenewer{rc: rc, interval: lease / 3, timeout: lease, leaseMs: strconv.FormatInt(lease.Milliseconds(), 10),
		spans: newSpanLog(spans)}
}

// Add starts renewing name for field every interval.
func (r *naiveRenewer) Add(name, field string) {
	l := &naiveLock{r: r, name: name, field: field}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return
	}
	l.t = time.AfterFunc(r.interval, l.renew)
	r.locks = append(r.locks, l)
}

func (l *naiveLock) renew() {
	r := l.r
	r.mu.RLock()
	if r.closed {
		r.mu.RUnlock()
		return
	}
	r.wg.Add(1)
	r.mu.RUnlock()
	defer r.wg.Done()
	ctx, cancel := context.WithTimeout(context.Background(), r.timeout)
	start := time.Now()
	n, err := naiveRenewScript.Exec(ctx, r.rc, []string{l.name}, []string{r.leaseMs, l.field}).AsInt64()
	cancel()
	r.spans.add(start, time.Now())
	r.calls.Add(1)
	switch {
	case err != nil:
		r.failed.Add(1)
	case n == 1:
		r.renewed.Add(1)
	default:
		r.lost.Add(1)
		l.gone.Store(true)
		return // lost: stop renewing it
	}
	r.mu.RLock()
	if !r.closed {
		l.t.Reset(r.interval)
	}
	r.mu.RUnlock()
}

// Close stops every timer and waits for renewals in flight.
func (r *naiveRenewer) Close() {
	r.mu.Lock()
	r.closed = true
	locks := r.locks
	r.locks = nil
	r.mu.Unlock()
	for _, l := range locks {
		l.t.Stop()
	}
	r.wg.Wait()
}

// --- small concurrency helpers -------------------------------------------------------------

// span is one renewal call or pass: when it started and ended.
type span struct{ start, end time.Time }

// spanLog keeps up to a fixed number of spans.
type spanLog struct {
	mu    sync.Mutex
	spans []span
	limit int
}

// newSpanLog preallocates room for limit spans, so that logging allocates nothing (the
// heap measurements take their baseline after this).
func newSpanLog(limit int) spanLog { return spanLog{limit: limit, spans: make([]span, 0, limit)} }

func (s *spanLog) add(start, end time.Time) {
	s.mu.Lock()
	if len(s.spans) < s.limit {
		s.spans = append(s.spans, span{start, end})
	}
	s.mu.Unlock()
}

// within returns the spans that started in [from, to).
func (s *spanLog) within(from, to time.Time) []span {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []span
	for _, x := range s.spans {
		if !x.start.Before(from) && x.start.Before(to) {
			out = append(out, x)
		}
	}
	return out
}

// bursts groups spans (sorted by start) into bursts separated by idle gaps longer than
// gap, and returns each burst's wall time, from its first start to its last end.
func bursts(spans []span, gap time.Duration) durs {
	slices.SortFunc(spans, func(a, b span) int { return a.start.Compare(b.start) })
	var out durs
	var cur span
	for i, x := range spans {
		if i == 0 || x.start.Sub(cur.end) > gap {
			if i > 0 {
				out = append(out, cur.end.Sub(cur.start))
			}
			cur = x
			continue
		}
		if x.end.After(cur.end) {
			cur.end = x.end
		}
	}
	if len(spans) > 0 {
		out = append(out, cur.end.Sub(cur.start))
	}
	return out
}

// timedClient wraps the renewal wheel's rueidis client and logs the wall time of each
// renewal pass: from the SCRIPT LOAD that Lua.ExecMulti sends first (through Nodes) to the
// end of the pipelined EVALSHA batch (DoMulti).
type timedClient struct {
	rueidis.Client
	mu       sync.Mutex
	lastDo   time.Time
	passes   spanLog
	passCmds []int
}

func (c *timedClient) Nodes() map[string]rueidis.Client {
	out := map[string]rueidis.Client{}
	for addr := range c.Client.Nodes() {
		out[addr] = c
	}
	return out
}

func (c *timedClient) Do(ctx context.Context, cmd rueidis.Completed) rueidis.RedisResult {
	c.mu.Lock()
	c.lastDo = time.Now()
	c.mu.Unlock()
	return c.Client.Do(ctx, cmd)
}

func (c *timedClient) DoMulti(ctx context.Context, multi ...rueidis.Completed) []rueidis.RedisResult {
	c.mu.Lock()
	start := c.lastDo
	c.lastDo = time.Time{}
	c.mu.Unlock()
	if start.IsZero() {
		start = time.Now()
	}
	n := len(multi)
	res := c.Client.DoMulti(ctx, multi...)
	c.passes.add(start, time.Now())
	c.mu.Lock()
	c.passCmds = append(c.passCmds, n)
	c.mu.Unlock()
	return res
}

// --- bulk lock creation and checks --------------------------------------------------------

// lockKey is the name of the i-th lock of a renewal run.
func lockKey(prefix string, i int) string { return prefix + strconv.Itoa(1_000_000 + i)[1:] }

// createLocks writes n locks in Redisson's layout (hash field → hold count 1, PEXPIRE
// lease) with pipelined HINCRBY + PEXPIRE, 500 locks per round trip, and calls
// registered(lo, hi) right after locks lo..hi-1 are written, as an acquire registers its
// lock with the watchdog right after the script set the lease. It returns the time spent in
// registered.
func createLocks(rc rueidis.Client, prefix, field string, n int, lease time.Duration,
	registered func(lo, hi int)) (time.Duration, error) {
	const batch = 500
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var spent time.Duration
	cmds := make(rueidis.Commands, 0, 2*batch)
	for lo := 0; lo < n; lo += batch {
		hi := min(lo+batch, n)
		cmds = cmds[:0]
		for i := lo; i < hi; i++ {
			name := lockKey(prefix, i)
			cmds = append(cmds,
				rc.B().Hincrby().Key(name).Field(field).Increment(1).Build(),
				rc.B().Pexpire().Key(name).Milliseconds(lease.Milliseconds()).Build())
		}
		for _, r := range rc.DoMulti(ctx, cmds...) {
			if err := r.Error(); err != nil {
				return spent, err
			}
		}
		start := time.Now()
		registered(lo, hi)
		spent += time.Since(start)
	}
	return spent, nil
}

// ttlCheck returns how many of the n locks have no positive PTTL, and the smallest PTTL.
func ttlCheck(rc rueidis.Client, prefix string, n int) (bad int, minTTL time.Duration, err error) {
	const batch = 1000
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	minTTL = time.Duration(math.MaxInt64)
	for lo := 0; lo < n; lo += batch {
		hi := min(lo+batch, n)
		cmds := make(rueidis.Commands, 0, hi-lo)
		for i := lo; i < hi; i++ {
			cmds = append(cmds, rc.B().Pttl().Key(lockKey(prefix, i)).Build())
		}
		for _, r := range rc.DoMulti(ctx, cmds...) {
			v, err := r.AsInt64()
			if err != nil {
				return 0, 0, err
			}
			if v <= 0 {
				bad++
			}
			minTTL = min(minTTL, time.Duration(v)*time.Millisecond)
		}
	}
	return bad, minTTL, nil
}

// poll calls cond every interval until it returns true or an error, counting the calls.
func poll(ctx context.Context, interval time.Duration, cond func() (bool, error)) (int, error) {
	for n := 1; ; n++ {
		ok, err := cond()
		if err != nil || ok {
			return n, err
		}
		select {
		case <-ctx.Done():
			return n, errors.Join(ctx.Err(), errors.New("poll: condition not reached"))
		case <-time.After(interval):
		}
	}
}
