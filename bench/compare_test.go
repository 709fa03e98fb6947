package bench

// TestCompare: goredisson side by side with the Go locks people use today (redsync,
// bsm/redislock, rueidislock) and, for the handoff, Java Redisson, on one local
// redis-server in one run, with the server's floor (PING, raw EVALSHA) measured in the same
// run. Contenders alternate in rounds so that load drift on the shared machine affects them
// alike. Writes docs/BENCHMARKS.md (between its generated-section markers) and
// docs/benchmarks.png after a complete, successful run. See README.md.

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/redis/rueidis/rueidislock"
	"github.com/stretchr/testify/require"

	"github.com/goredisson/goredisson/integration/javapeer"
	"github.com/goredisson/goredisson/internal/keys"
	"github.com/goredisson/goredisson/internal/redistest"
	"github.com/goredisson/goredisson/lua"
)

// Sizes of TestCompare (GOREDISSON_BENCH_QUICK=1 shrinks the counts, see quickSizes).
var (
	uncRounds   = 20  // measured rounds of (a); each contender runs uncOps ops per round
	uncWarm     = 2   // rounds discarded first
	uncOps      = 200 // ops per contender per round
	thrRounds   = 5   // measured rounds of (b)
	thrWindow   = 2 * time.Second
	thrWarm     = 500 * time.Millisecond // one discarded round of this length first
	hoBlocks    = 6                      // blocks per contender in (c), alternating with the others
	hoPerBlock  = 50                     // measured handoffs per block (hoBlocks*hoPerBlock per contender)
	hoWarm      = 3                      // handoffs discarded at the start of each block
	renewLocksC = renewLocks             // locks held in (d)
)

const (
	thrWorkers  = 64
	thrProcs    = 4 // simulated processes; worker g uses process g % thrProcs
	thrNames    = 1000
	thrDeadline = 5 * time.Second // per blocking acquire
	hoWaiters   = 16
	hoReadyMax  = 2 * time.Second
	hoCallMax   = 5 * time.Second // deadline of each Go contender's lock call in (c)
	javaVersion = "4.7.0"
)

// EnvBenchQuick makes TestCompare a smoke run (a few seconds per part, 10,000 locks in (d));
// it then writes docs only where GOREDISSON_BENCH_OUT points.
const EnvBenchQuick = "GOREDISSON_BENCH_QUICK"

func quickSizes() {
	uncRounds, uncWarm, uncOps = 3, 1, 50
	thrRounds, thrWindow, thrWarm = 1, 500*time.Millisecond, 200*time.Millisecond
	hoBlocks, hoPerBlock, hoWarm = 2, 10, 2
	renewLocksC = renewLocks / 10
}

// EnvBenchOut overrides the directory TestCompare writes BENCHMARKS.md and benchmarks.png
// to (default: the module's docs/).
const EnvBenchOut = "GOREDISSON_BENCH_OUT"

// compareCommand is the one command that reproduces docs/BENCHMARKS.md.
const compareCommand = "GOREDISSON_BENCH=1 go test -run TestCompare -v -timeout 30m ./bench/"

type compareResult struct {
	machine  machineInfo
	started  time.Time
	took     time.Duration
	load     map[string]string // part -> load average when the part ended ("start" too)
	unc      []uncRow
	thr      []thrRow
	ho       []hoRow
	hoMore   map[string][]hoRow // the context variants of (c), by hoVariant.key
	hoFloor  durs               // raw release script then raw acquire script by another client, after a pause
	javaNote string
	javaPipe durs // javapeer "ping" round trips (Go -> JVM -> Go, no Redis)
	renew    []renewResult
	rlHeld   *heldExtra
	parts    map[string]bool
}

type machineInfo struct {
	cpu, goVersion, redis, mode, rev string
	cores, gomaxprocs                int
}

// gitRev describes the code measured: HEAD and the files outside bench/ and docs/ with
// uncommitted changes (others may be editing the library while this runs).
func gitRev() string {
	head, err := exec.Command("git", "-C", "..", "rev-parse", "--short", "HEAD").Output()
	if err != nil {
		return "? (git: " + err.Error() + ")"
	}
	st, err := exec.Command("git", "-C", "..", "status", "--porcelain", "--untracked-files=no").Output()
	if err != nil {
		return strings.TrimSpace(string(head))
	}
	var dirty []string
	for _, line := range strings.Split(string(st), "\n") {
		if len(line) < 4 {
			continue
		}
		f := strings.TrimSpace(line[3:])
		if !strings.HasPrefix(f, "bench/") && !strings.HasPrefix(f, "docs/") && f != "go.mod" && f != "go.sum" {
			dirty = append(dirty, "`"+f+"`")
		}
	}
	out := "commit `" + strings.TrimSpace(string(head)) + "`"
	if len(dirty) > 0 {
		out += " with uncommitted changes in " + strings.Join(dirty, ", ")
	}
	return out
}

// TestCompare runs the four workloads; each is a subtest, so one can be run alone
// (-run 'TestCompare/handoff'), but only a complete run writes the docs.
func TestCompare(t *testing.T) {
	if os.Getenv(EnvBench) != "1" {
		t.Skipf("measurements: set %s=1 to run (see bench/README.md)", EnvBench)
	}
	quick := os.Getenv(EnvBenchQuick) == "1"
	if quick {
		quickSizes()
	}
	srv := redistest.Start(t)
	ctl := namedClient(t, srv, "cmp-ctl")
	res := &compareResult{started: time.Now(), load: map[string]string{"start": loadavg()}, parts: map[string]bool{},
		machine: machineInfo{cpu: cpuModel(), cores: runtime.NumCPU(), gomaxprocs: runtime.GOMAXPROCS(0),
			goVersion: runtime.Version(), redis: serverInfo(t, ctl, "redis_version"), mode: srv.Mode(), rev: gitRev()}}
	part := func(name string, f func(t *testing.T)) {
		ok := t.Run(name, func(t *testing.T) {
			f(t)
			res.parts[name] = !t.Skipped()
		})
		res.load[name] = loadavg()
		if !ok {
			res.parts[name] = false
		}
	}
	part("uncontended", func(t *testing.T) { res.unc = compareUncontended(t, srv) })
	part("throughput", func(t *testing.T) { res.thr = compareThroughput(t, srv, ctl) })
	part("handoff", func(t *testing.T) { compareHandoff(t, srv, ctl, res) })
	part("renewal", func(t *testing.T) { compareRenewal(t, srv, res) })
	res.took = time.Since(res.started)

	md := renderCompare(res)
	fmt.Print("\n" + md)
	complete := !t.Failed()
	for _, p := range []string{"uncontended", "throughput", "handoff", "renewal"} {
		complete = complete && res.parts[p]
	}
	if !complete {
		t.Logf("not every part ran (or a part failed): docs not written")
		return
	}
	dir := os.Getenv(EnvBenchOut)
	if dir == "" {
		if quick {
			t.Logf("%s=1: docs not written (set %s to write them somewhere)", EnvBenchQuick, EnvBenchOut)
			return
		}
		dir = filepath.Join("..", "docs")
	}
	require.NoError(t, writeGenerated(filepath.Join(dir, "BENCHMARKS.md"), md))
	require.NoError(t, renderChart(res, filepath.Join(dir, "benchmarks.png")))
	t.Logf("wrote %s and %s", filepath.Join(dir, "BENCHMARKS.md"), filepath.Join(dir, "benchmarks.png"))
}

// cpuModel returns the first "model name" of /proc/cpuinfo.
func cpuModel() string {
	b, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return "?"
	}
	for _, line := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return "?"
}

// rotated returns xs rotated left by r: round r starts with a different contender.
func rotated[T any](xs []T, r int) []T {
	r %= len(xs)
	return append(slices.Clone(xs[r:]), xs[:r]...)
}

// cmdCount is a tally of Redis commands (INFO commandstats names) over some acquisitions.
type cmdCount struct {
	cmds map[string]int64
	acqs int64
}

// add adds after-before, less the control client's own commands (ctl) and the INFO that
// took `before` (INFO counts itself only once it has run).
func (c *cmdCount) add(before, after, ctl map[string]int64, acqs int64) {
	if c.cmds == nil {
		c.cmds = map[string]int64{}
	}
	for k, v := range after {
		d := v - before[k] - ctl[k]
		if k == "info" {
			d--
		}
		if d != 0 {
			c.cmds[k] += d
		}
	}
	c.acqs += acqs
}

// per returns the commands per acquisition, PING (client keepalive, not per acquisition)
// excluded.
func (c cmdCount) per() float64 {
	if c.acqs == 0 {
		return 0
	}
	var n int64
	for k, v := range c.cmds {
		if k != "ping" {
			n += v
		}
	}
	return float64(n) / float64(c.acqs)
}

// scripts returns EVALSHA+EVAL per acquisition.
func (c cmdCount) scripts() float64 {
	if c.acqs == 0 {
		return 0
	}
	return float64(c.cmds["evalsha"]+c.cmds["eval"]) / float64(c.acqs)
}

// breakdown lists the commands per acquisition, largest first, PING last and marked.
func (c cmdCount) breakdown() string {
	if c.acqs == 0 {
		return ""
	}
	type kv struct {
		k string
		v int64
	}
	var xs []kv
	for k, v := range c.cmds {
		if v > 0 && k != "ping" {
			xs = append(xs, kv{k, v})
		}
	}
	slices.SortFunc(xs, func(a, b kv) int {
		if a.v != b.v {
			return int(b.v - a.v)
		}
		return strings.Compare(a.k, b.k)
	})
	var parts []string
	for _, x := range xs {
		if f := float64(x.v) / float64(c.acqs); f >= 0.005 {
			parts = append(parts, fmt.Sprintf("%s %.2f", x.k, f))
		}
	}
	if p := c.cmds["ping"]; p > 0 {
		parts = append(parts, fmt.Sprintf("(ping %.2f, not counted)", float64(p)/float64(c.acqs)))
	}
	return strings.Join(parts, ", ")
}

// --- (a) uncontended ------------------------------------------------------------------------

type uncRow struct {
	name, short string
	floor       bool
	d           durs
	allocs      float64 // heap allocations per op (testing.AllocsPerRun, whole process)
}

// compareUncontended: one goroutine, one lock name per contender, acquire + release
// back to back, each op timed; the floor rows time a PING and two EVALSHA of `return 1`.
func compareUncontended(t *testing.T, srv *redistest.Server) []uncRow {
	type entry struct {
		row *uncRow
		op  func(ctx context.Context) error
	}
	var entries []entry
	lockOp := func(p proc, name string) func(ctx context.Context) error {
		return func(ctx context.Context) error {
			rel, err := p.lock(ctx, name)
			if err != nil {
				return err
			}
			return rel()
		}
	}
	cs := goContenders()
	for i, c := range cs {
		entries = append(entries, entry{&uncRow{name: c.name, short: c.short},
			lockOp(c.newProc(t, srv, procName("cmp-unc", i)), fmt.Sprintf("bench:cmp:unc:%d", i))})
		if i == 0 {
			entries = append(entries, entry{&uncRow{name: "goredisson (rlock), cancelable ctx", short: "goredisson\ncancel-ctx"},
				lockOp(newRlockProc(true)(t, srv, "cmp-unc-cancel"), "bench:cmp:unc:cancel")})
		}
	}
	floor := namedClient(t, srv, "cmp-unc-floor")
	raw := newRawProc(t, srv, "cmp-unc-raw")
	entries = append(entries,
		entry{&uncRow{name: "floor: PING", short: "PING", floor: true}, func(ctx context.Context) error {
			return floor.Do(ctx, floor.B().Ping().Build()).Error()
		}},
		entry{&uncRow{name: "floor: 2 × EVALSHA `return 1`", short: "2×EVALSHA", floor: true}, lockOp(raw, "bench:cmp:unc:raw")},
		entry{&uncRow{name: "floor: rlock's acquire + release scripts, raw", short: "raw rlock", floor: true}, rawRlockOp(floor)},
	)
	ctx := context.Background()
	for r := range uncRounds + uncWarm {
		for _, e := range rotated(entries, r) {
			for range uncOps {
				start := time.Now()
				err := e.op(ctx)
				took := time.Since(start)
				require.NoError(t, err, e.row.name)
				if r >= uncWarm {
					e.row.d = append(e.row.d, took)
				}
			}
		}
	}
	// Allocations per op, after the timed rounds (AllocsPerRun counts the whole process:
	// a contender's background goroutines too).
	for _, e := range entries {
		var err error
		e.row.allocs = testing.AllocsPerRun(uncOps, func() {
			if oerr := e.op(ctx); oerr != nil {
				err = oerr
			}
		})
		require.NoError(t, err, e.row.name)
	}
	out := make([]uncRow, len(entries))
	for i, e := range entries {
		out[i] = *e.row
	}
	return out
}

// rawRlockOp runs rlock's acquire and release scripts through rueidis without the library.
func rawRlockOp(rc rueidis.Client) func(ctx context.Context) error {
	const name = "bench:cmp:unc:rawrlock"
	channel := keys.LockChannel(name)
	field := "00000000-0000-0000-0000-000000000000:1"
	var i int
	return func(ctx context.Context) error {
		i++
		if acquired, err := rawAcquire(ctx, rc, name, field); !acquired {
			return fmt.Errorf("acquire: %v", err)
		}
		return rawRelease(ctx, rc, name, channel, field, strconv.Itoa(i))
	}
}

// rawAcquire sends rlock's acquire script for field on name (30 s lease): true when it
// acquired, false with a nil error when another field holds name.
func rawAcquire(ctx context.Context, rc rueidis.Client, name, field string) (bool, error) {
	err := lua.Acquire.Exec(ctx, rc, []string{name}, []string{"30000", field}).Error()
	if rueidis.IsRedisNil(err) {
		return true, nil
	}
	return false, err
}

// rawRelease sends rlock's release script for field's only hold of name, request id req.
func rawRelease(ctx context.Context, rc rueidis.Client, name, channel, field, req string) error {
	n, err := lua.Release.Exec(ctx, rc, []string{name, channel, keys.UnlockLatch(name, req)},
		[]string{"0", "30000", field, "PUBLISH", "1000"}).AsInt64()
	if err == nil && n != 1 {
		err = fmt.Errorf("release: %d", n)
	}
	return err
}

// --- (b) throughput ---------------------------------------------------------------------------

type thrRow struct {
	name, short string
	floor       bool
	acqs        int64         // acquisitions completed inside the windows
	window      time.Duration // sum of the measured windows
	timeouts    int64         // acquires that hit thrDeadline
	lat         durs          // lock-call latency of a sample of acquisitions
	failed      int64         // failed attempts (hooked) in all rounds
	allAcqs     int64         // acquisitions in all measured rounds, also after the window
	cmds        cmdCount
}

func (r thrRow) perSec() float64 { return float64(r.acqs) / r.window.Seconds() }

// compareThroughput: thrWorkers goroutines spread over thrProcs simulated processes take
// and release random names out of thrNames, blocking (deadline thrDeadline) when a name is
// taken, with an empty critical section.
func compareThroughput(t *testing.T, srv *redistest.Server, ctl rueidis.Client) []thrRow {
	type entry struct {
		row   *thrRow
		procs []proc
		names []string
	}
	var entries []entry
	add := func(name, short string, floor bool, newProc func(testing.TB, *redistest.Server, string) proc, tag string) {
		e := entry{row: &thrRow{name: name, short: short, floor: floor}}
		for i := range thrProcs {
			e.procs = append(e.procs, newProc(t, srv, procName("cmp-thr-"+tag, i)))
		}
		for i := range thrNames {
			e.names = append(e.names, fmt.Sprintf("bench:cmp:thr:%s:%d", tag, i))
		}
		entries = append(entries, e)
	}
	for i, c := range goContenders() {
		add(c.name, c.short, false, c.newProc, strconv.Itoa(i))
	}
	add("floor: rlock's acquire + release scripts, raw (a refused acquire sent again at once)", "raw rlock", true, newRawRlockProc, "rawrlock")
	add("floor: 2 × EVALSHA `return 1` (no lock)", "2×EVALSHA", true, newRawProc, "raw")

	round := func(e entry, window time.Duration, measured bool) {
		var (
			stop             atomic.Bool
			inWindow, all    atomic.Int64
			timeouts, failed atomic.Int64
			wg               sync.WaitGroup
			mu               sync.Mutex
			errs             []error
		)
		f0 := int64(0)
		for _, p := range e.procs {
			f0 += p.failed()
		}
		s0, err := cmdStats(ctl)
		require.NoError(t, err)
		start := time.Now()
		end := start.Add(window)
		lats := make([]durs, thrWorkers)
		for g := range thrWorkers {
			wg.Go(func() {
				p := e.procs[g%thrProcs]
				rng := rand.New(rand.NewPCG(uint64(g), uint64(start.UnixNano())))
				for n := 0; !stop.Load(); n++ {
					name := e.names[rng.IntN(thrNames)]
					ctx, cancel := context.WithTimeout(context.Background(), thrDeadline)
					t0 := time.Now()
					rel, err := p.lock(ctx, name)
					took := time.Since(t0)
					if err == nil {
						err = rel()
					}
					cancel()
					if err != nil {
						if ctx.Err() != nil {
							timeouts.Add(1)
							continue
						}
						mu.Lock()
						errs = append(errs, fmt.Errorf("%s: %w", name, err))
						mu.Unlock()
						stop.Store(true)
						return
					}
					all.Add(1)
					if time.Now().Before(end) {
						inWindow.Add(1)
						if n%8 == 0 {
							lats[g] = append(lats[g], took)
						}
					}
				}
			})
		}
		time.Sleep(window)
		stop.Store(true)
		wg.Wait()
		require.NoError(t, errors.Join(errs...), e.row.name)
		if !measured {
			return
		}
		s1, err := cmdStats(ctl)
		require.NoError(t, err)
		for _, p := range e.procs {
			failed.Add(p.failed())
		}
		e.row.acqs += inWindow.Load()
		e.row.allAcqs += all.Load()
		e.row.window += window
		e.row.timeouts += timeouts.Load()
		e.row.failed += failed.Load() - f0
		for _, l := range lats {
			e.row.lat = append(e.row.lat, l...)
		}
		e.row.cmds.add(s0, s1, nil, all.Load())
	}
	for _, e := range entries {
		round(e, thrWarm, false)
	}
	for r := range thrRounds {
		for _, e := range rotated(entries, r) {
			round(e, thrWindow, true)
		}
	}
	out := make([]thrRow, len(entries))
	for i, e := range entries {
		out[i] = *e.row
	}
	return out
}

// --- (c) handoff ------------------------------------------------------------------------------

type hoRow struct {
	name, short string
	java        bool
	samples     durs // release call start -> next acquirer's lock call returns
	unlocks     durs // duration of the release call
	notReady    int  // rounds released after hoReadyMax without seeing every waiter wait
	stalls      int  // lock calls that ran into hoCallMax (the participant then called lock again)
	stallsFree  int  // of these, how many found the lock's key absent in Redis (a lost wake-up)
	handoffs    int  // measured
	cmds        cmdCount
	failed      int64   // hooked failed attempts in the measured handoffs (polling contenders)
	failedPer   float64 // failed per measured handoff
}

// hoVariant is one handoff configuration: n participants (n-1 waiters), the holder keeps
// the lock `hold` plus a random 1-5 ms once every waiter waits.
type hoVariant struct {
	key, title                string
	n                         int
	hold                      time.Duration
	blocks, perBlock, warmups int
}

// hoVariants: the workload of the brief (16 waiters, short holds) and two for context: the
// same with 100 ms holds (polling peers poll while the lock is held) and one waiter.
func hoVariants() []hoVariant {
	return []hoVariant{
		{key: "main", title: "16 waiters", n: hoWaiters + 1, blocks: hoBlocks, perBlock: hoPerBlock, warmups: hoWarm},
		{key: "hold100", title: "16 waiters, 100 ms holds", n: hoWaiters + 1, hold: 100 * time.Millisecond,
			blocks: max(hoBlocks/3, 1), perBlock: max(hoPerBlock*3/10, 5), warmups: hoWarm},
		{key: "one", title: "1 waiter", n: 2, blocks: max(hoBlocks/3, 1), perBlock: max(hoPerBlock/2, 5), warmups: hoWarm},
	}
}

// hoContender is one contender's handoff setup: hoWaiters+1 participants, each its own
// simulated process, passing one lock around.
type hoContender struct {
	name    string
	short   string
	java    bool
	rows    map[string]*hoRow // by hoVariant.key
	kind    waitKind
	parts   []proc
	names   []string // client names of the participants (goredisson)
	lock    string
	key     string        // the lock's Redis key (rueidislock prefixes the name)
	callMax time.Duration // deadline of one lock call; 0: none (Java: a timed-out request would still run in the JVM)
	inLock  []atomic.Bool
	entered []atomic.Int64 // failed() when the participant last entered lock
	watch   *subWatch
	// atMeasured, when set, is called right after the warm-up's last acquisition (first)
	// and the last measured one, under the block's lock (TestFairHandoff's MONITOR).
	atMeasured func(first bool) error
}

func compareHandoff(t *testing.T, srv *redistest.Server, ctl rueidis.Client, res *compareResult) {
	var hs []*hoContender
	for i, c := range goContenders() {
		h := &hoContender{name: c.name, short: c.short, kind: c.kind, lock: fmt.Sprintf("bench:cmp:ho:%d", i), callMax: hoCallMax}
		h.key = h.lock
		if c.short == "rueidislock" {
			h.key = "rueidislock:0:" + h.lock
		}
		for j := range hoWaiters + 1 {
			name := procName(fmt.Sprintf("cmp-ho%d", i), j)
			h.names = append(h.names, name)
			h.parts = append(h.parts, c.newProc(t, srv, name))
		}
		hs = append(hs, h)
	}
	if jar, why := javaJar(t); jar == "" {
		res.javaNote = why
	} else {
		h := &hoContender{name: "Java Redisson 4.7.0 RLock (peer-" + javaVersion + ".jar), one JVM per participant", short: "Java\nRedisson", java: true,
			kind: waitsJava, lock: "bench:cmp:ho:java", key: "bench:cmp:ho:java"}
		var pipe durs
		for j := range hoWaiters + 1 {
			p := javapeer.Start(t, jar, "redis://"+srv.Addr, javapeer.WithJVMArgs("-Xmx128m"))
			h.parts = append(h.parts, &javaProc{p: p})
			if j == 0 {
				for k := range 300 {
					start := time.Now()
					r, err := p.Do(context.Background(), "", "ping")
					if k >= 50 {
						pipe = append(pipe, time.Since(start))
					}
					require.NoError(t, err)
					require.True(t, r.OK, r.Err)
				}
			}
		}
		res.javaPipe = pipe
		hs = append(hs, h)
	}
	for _, h := range hs {
		h.rows = map[string]*hoRow{}
		h.inLock = make([]atomic.Bool, len(h.parts))
		h.entered = make([]atomic.Int64, len(h.parts))
		switch h.kind {
		case waitsPubSub:
			names := h.names
			h.watch = &subWatch{ctl: ctl, match: func(c clientConn) bool { return slices.Contains(names, c.Name) }}
		case waitsJava:
			h.watch = &subWatch{ctl: ctl, pubsubType: true}
		}
	}
	floorA, floorB := namedClient(t, srv, "cmp-ho-floor-a"), namedClient(t, srv, "cmp-ho-floor-b")
	res.hoMore = map[string][]hoRow{}
	for _, v := range hoVariants() {
		for _, h := range hs {
			h.rows[v.key] = &hoRow{name: h.name, short: h.short, java: h.java}
		}
		for b := range v.blocks {
			for _, h := range rotated(hs, b) {
				ok := t.Run(fmt.Sprintf("%s/block%d/%s", v.key, b, strings.ReplaceAll(h.short, "\n", "-")), func(t *testing.T) {
					require.NoError(t, h.block(ctl, v, h.rows[v.key]))
				})
				require.True(t, ok)
			}
			if v.key == "main" {
				res.hoFloor = append(res.hoFloor, handoffFloor(t, floorA, floorB, "bench:cmp:ho:floor", 0, v.perBlock)...)
			}
		}
		for _, h := range hs {
			r := h.rows[v.key]
			r.failedPer = float64(r.failed) / float64(r.handoffs)
			if v.key == "main" {
				res.ho = append(res.ho, *r)
			} else {
				res.hoMore[v.key] = append(res.hoMore[v.key], *r)
			}
		}
	}
}

// javaJar returns the Java peer's jar, or "" and why it is not used.
func javaJar(t *testing.T) (string, string) {
	if _, err := os.Stat(filepath.Join(javapeer.TargetDir(), "peer-"+javaVersion+".jar")); err != nil {
		return "", fmt.Sprintf("Java Redisson skipped: %v (build: %s)", err, javapeer.BuildCommand(javaVersion))
	}
	var jar string
	t.Run("java-jar", func(t *testing.T) { jar = javapeer.JarPath(t, javaVersion) }) // skips when java is missing or the jar is stale
	if jar == "" {
		return "", "Java Redisson skipped: java missing or the jar older than its sources (see the java-jar subtest)"
	}
	return jar, ""
}

// javaProc is one owner of a JVM of the Java peer: owner "o" when empty. typ is the peer's
// lock type ("fair." for getFairLock; empty for RLock).
type javaProc struct {
	p          *javapeer.Peer
	owner, typ string
}

func (j *javaProc) lock(ctx context.Context, name string) (func() error, error) {
	owner := cmp.Or(j.owner, "o")
	r, err := j.p.Do(ctx, owner, j.typ+"lock", name)
	if err == nil && !r.OK {
		err = errors.New(r.Err)
	}
	if err != nil {
		return nil, err
	}
	return func() error {
		r, err := j.p.Do(context.Background(), owner, j.typ+"unlock", name)
		if err == nil && !r.OK {
			err = errors.New(r.Err)
		}
		return err
	}, nil
}

func (j *javaProc) failed() int64 { return 0 }

// subWatch lists the connections whose subscriptions tell that waiters wait, without
// listing every connection of the server on every poll: the first poll (and every 20th
// poll that finds the waiters not ready) lists all, later ones only the ids found.
type subWatch struct {
	ctl        rueidis.Client
	match      func(clientConn) bool // which connections to keep (nil: all listed)
	pubsubType bool                  // list CLIENT LIST TYPE pubsub (RESP2 subscribers: Redisson's)
	ids        []int64
	polls      int
	prev, cur  []int64 // Java: subscribed connection ids when the last release was sent, and now
	numsub     int64   // CLIENT LIST and PUBSUB NUMSUB commands sent
	lists      int64
	llens      int64 // LLEN commands sent (waitsQueue)
}

func (w *subWatch) list() ([]clientConn, error) {
	w.lists++
	w.polls++
	if w.pubsubType {
		return parseClientList(do(w.ctl, w.ctl.B().ClientList().TypePubsub().Build()))
	}
	if len(w.ids) == 0 || w.polls%20 == 0 {
		all, err := clientList(w.ctl)
		if err != nil {
			return nil, err
		}
		w.ids = w.ids[:0]
		var out []clientConn
		for _, c := range all {
			if w.match == nil || w.match(c) {
				w.ids = append(w.ids, c.ID)
				out = append(out, c)
			}
		}
		return out, nil
	}
	return parseClientList(do(w.ctl, w.ctl.B().ClientList().Id().ClientId(w.ids...).Build()))
}

// othersSubscribed reports whether waiters of the processes named names, holder's excepted,
// each have a connection subscribed (PUBSUB NUMSUB on channel first, which also counts a
// subscription the holder has not yet dropped, then CLIENT LIST, which tells them apart).
func (w *subWatch) othersSubscribed(channel string, names []string, holder, waiters int) (bool, error) {
	w.numsub++
	if subs, err := numsub(w.ctl, channel); err != nil || subs < int64(waiters) {
		return false, err
	}
	conns, err := w.list()
	if err != nil {
		return false, err
	}
	subscribed := map[string]bool{}
	for _, c := range conns {
		if c.Sub > 0 && c.Name != names[holder] && slices.Contains(names, c.Name) {
			subscribed[c.Name] = true
		}
	}
	return len(subscribed) >= waiters, nil
}

// ready reports whether every participant but holder waits: inside lock, and
//   - polling contenders: made a failed attempt since entering (hooked counter);
//   - goredisson: its client's connection shows sub>=1 and PUBSUB NUMSUB >= waiters;
//   - Java: the set of subscribed Redisson connections has hoWaiters members and differs from
//     the set at the previous release (the new holder's JVM unsubscribed, the old holder's
//     subscribed).
func (h *hoContender) ready(holder, n int) (bool, error) {
	waiters := n - 1
	for i := range n {
		if i != holder && !h.inLock[i].Load() {
			return false, nil
		}
	}
	switch h.kind {
	case waitsPolling:
		for i, p := range h.parts[:n] {
			if i != holder && p.failed() <= h.entered[i].Load() {
				return false, nil
			}
		}
		return true, nil
	case waitsPubSub:
		return h.watch.othersSubscribed(keys.LockChannel(h.lock), h.names[:n], holder, waiters)
	case waitsQueue:
		h.watch.llens++
		n, err := do(h.watch.ctl, h.watch.ctl.B().Llen().Key(keys.FairQueue(h.lock)).Build()).AsInt64()
		return err == nil && n >= int64(waiters), err
	default: // waitsJava
		conns, err := h.watch.list()
		if err != nil {
			return false, err
		}
		var ids []int64
		for _, c := range conns {
			if c.Sub > 0 {
				ids = append(ids, c.ID)
			}
		}
		slices.Sort(ids)
		h.watch.cur = ids
		return len(ids) >= waiters && !slices.Equal(ids, h.watch.prev), nil
	}
}

// block runs hoWarm+hoPerBlock handoffs among the participants, then lets every waiter
// take the lock once and leave (drain), so that the block ends with nobody waiting.
// Participant 0 takes the lock first; a holder waits (at most hoReadyMax) until every other
// participant waits, sleeps a random 1-5 ms, notes the time and releases; the participant
// whose lock call returns next records the delay and becomes the holder; the releaser
// calls lock again only after that, so every release has exactly hoWaiters waiters.
// INFO commandstats is read right after the hoWarm-th and the last measured acquisition.
func (h *hoContender) block(ctl rueidis.Client, v hoVariant, row *hoRow) error {
	parts := h.parts[:v.n]
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	base := time.Now()
	var (
		mu         sync.Mutex
		k          int
		releasedAt atomic.Int64
		stop       = make(chan struct{})
		handed     = make(chan struct{}, 1)
		s0         map[string]int64
		ctl0       [3]int64
		f0         int64
	)
	sumFailed := func() int64 {
		var n int64
		for _, p := range parts {
			n += p.failed()
		}
		return n
	}
	first, err := parts[0].lock(ctx, h.lock)
	if err != nil {
		return fmt.Errorf("first lock: %w", err)
	}
	run := func(i int, rel func() error) error {
		p := parts[i]
		for {
			if rel == nil {
				h.entered[i].Store(p.failed())
				h.inLock[i].Store(true)
				lctx, lcancel := ctx, context.CancelFunc(func() {})
				if h.callMax > 0 {
					lctx, lcancel = context.WithTimeout(ctx, h.callMax)
				}
				r, err := p.lock(lctx, h.lock)
				h.inLock[i].Store(false)
				at := time.Since(base)
				if err != nil && ctx.Err() == nil && lctx.Err() != nil {
					// The call ran into its deadline: count it, note whether the lock was
					// free meanwhile, and wait again (the pending release, if any, is still
					// measured, from its release to this participant's next acquisition).
					lcancel()
					n, xerr := do(ctl, ctl.B().Exists().Key(h.key).Build()).AsInt64()
					mu.Lock()
					row.stalls++
					if xerr == nil && n == 0 {
						row.stallsFree++
					}
					mu.Unlock()
					continue
				}
				if err != nil {
					lcancel()
					return fmt.Errorf("participant %d: lock: %w", i, err)
				}
				// The lock's context must outlive the hold (rueidislock releases when it ends).
				r0 := r
				r = func() error { err := r0(); lcancel(); return err }
				select {
				case <-stop: // drain
					return r()
				default:
				}
				rel = r
				relAt := releasedAt.Swap(0)
				if relAt == 0 {
					_ = rel()
					return fmt.Errorf("participant %d acquired with no release pending", i)
				}
				mu.Lock()
				k++
				if k > v.warmups {
					row.samples = append(row.samples, at-time.Duration(relAt))
				}
				var err2 error
				switch k {
				case v.warmups:
					s0, err2 = cmdStats(ctl)
					ctl0 = [3]int64{h.numsubs(), h.lists(), h.llens()}
					f0 = sumFailed()
					if h.atMeasured != nil {
						err2 = errors.Join(err2, h.atMeasured(true))
					}
				case v.warmups + v.perBlock:
					var s1 map[string]int64
					s1, err2 = cmdStats(ctl)
					if h.atMeasured != nil {
						err2 = errors.Join(err2, h.atMeasured(false))
					}
					if err2 == nil {
						row.cmds.add(s0, s1, map[string]int64{"pubsub|numsub": h.numsubs() - ctl0[0],
							"client|list": h.lists() - ctl0[1], "llen": h.llens() - ctl0[2]}, int64(v.perBlock))
						row.handoffs += v.perBlock
						row.failed += sumFailed() - f0
					}
					close(stop)
					mu.Unlock()
					return errors.Join(err2, rel())
				}
				mu.Unlock()
				if err2 != nil {
					_ = rel()
					return err2
				}
				handed <- struct{}{}
			}
			// Holding: wait for every other participant to wait, pause, release.
			deadline := time.Now().Add(hoReadyMax)
			for {
				ok, err := h.ready(i, v.n)
				if err != nil {
					_ = rel()
					return err
				}
				if ok {
					break
				}
				if time.Now().After(deadline) {
					mu.Lock()
					row.notReady++
					mu.Unlock()
					break
				}
				time.Sleep(100 * time.Microsecond)
			}
			if h.watch != nil {
				h.watch.prev = h.watch.cur
			}
			time.Sleep(v.hold + time.Millisecond + rand.N(4*time.Millisecond))
			start := time.Since(base)
			releasedAt.Store(int64(start))
			err := rel()
			took := time.Since(base) - start
			rel = nil
			if err != nil {
				return fmt.Errorf("participant %d: release: %w", i, err)
			}
			mu.Lock()
			if k >= v.warmups {
				row.unlocks = append(row.unlocks, took)
			}
			mu.Unlock()
			select {
			case <-handed:
			case <-stop:
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		}
	}
	errs := make(chan error, len(parts))
	var wg sync.WaitGroup
	for i := range parts {
		wg.Go(func() {
			var rel func() error
			if i == 0 {
				rel = first
			}
			err := run(i, rel)
			if err != nil {
				cancel()
			}
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	var all []error
	for err := range errs {
		all = append(all, err)
	}
	return errors.Join(all...)
}

func (h *hoContender) numsubs() int64 {
	if h.watch == nil {
		return 0
	}
	return h.watch.numsub
}

func (h *hoContender) lists() int64 {
	if h.watch == nil {
		return 0
	}
	return h.watch.lists
}

func (h *hoContender) llens() int64 {
	if h.watch == nil {
		return 0
	}
	return h.watch.llens
}

// --- (d) renewal ------------------------------------------------------------------------------

// heldExtra is what the rueidislock row of (d) adds to renewResult.
type heldExtra struct {
	stackPerLock float64 // goroutine stack bytes per held lock (not in HeapAlloc)
	acquireWall  time.Duration
	stalls       int // WithContext calls on a free name given up after rlHeldCallMax (then retried)
}

// rlHeldCallMax bounds one WithContext of (d): in client-side-caching mode rueidislock has
// no fallback timer, and an attempt that times out (TryNextAfter, 20 ms, when the ctx has no
// deadline) on a free name leaves the call waiting for an invalidation that never comes.
const rlHeldCallMax = 10 * time.Second

func compareRenewal(t *testing.T, srv *redistest.Server, res *compareResult) {
	var wheel, naive, rl renewResult
	var extra heldExtra
	t.Run("wheel", func(t *testing.T) { wheel = measureWheel(t, srv) })
	t.Run("naive", func(t *testing.T) { naive = measureNaive(t, srv, renewLocksC) })
	t.Run("rueidislock", func(t *testing.T) { rl, extra = measureRueidislockHeld(t, srv, renewLocksC/10) })
	res.renew = []renewResult{wheel, naive, rl}
	res.rlHeld = &extra
}

// measureRueidislockHeld holds n locks with one rueidislock Locker whose KeyValidity is
// renewLease (3 s) and ExtendInterval a third of it (1 s), the wheel's lease and interval:
// rueidislock's own automatic extension, one goroutine and one extend script call per lock
// per interval.
func measureRueidislockHeld(t *testing.T, srv *redistest.Server, n int) (renewResult, heldExtra) {
	ctl, _ := renewSetup(t, srv, "cmp-rl-held")
	p := newRueidislock(t, srv, "cmp-rl-held", rueidislock.LockerOption{KeyValidity: renewLease, ExtendInterval: renewLease / 3})
	r := renewResult{kind: "rueidislock auto-extend", locks: n, interval: renewLease / 3}
	const prefix = "bench:renew:rl:"
	type held struct {
		ctx    context.Context
		cancel context.CancelFunc
	}
	locks := make([]held, n)
	runtime.GC()
	var ms0 runtime.MemStats
	runtime.ReadMemStats(&ms0)
	h0 := heapAfterGC()
	start := time.Now()
	var next atomic.Int64
	var stalls atomic.Int64
	var wg sync.WaitGroup
	errs := make([]error, thrWorkers)
	// acquire calls WithContext with a ctx that has no deadline (a deadline would also end
	// the lock) but is cancelled if the call has not returned after rlHeldCallMax.
	acquire := func(name string) (held, error) {
		for try := 0; ; try++ {
			base, stop := context.WithCancel(context.Background())
			tm := time.AfterFunc(rlHeldCallMax, stop)
			ctx, cancel, err := p.l.WithContext(base, name)
			if tm.Stop() {
				if err != nil {
					stop()
					return held{}, err
				}
				return held{ctx, func() { cancel(); stop() }}, nil
			}
			stop()
			if err == nil {
				cancel()
			}
			stalls.Add(1)
			if try == 2 {
				return held{}, fmt.Errorf("%s: WithContext did not return within %v, 3 times", name, rlHeldCallMax)
			}
		}
	}
	for g := range thrWorkers {
		wg.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				h, err := acquire(lockKey(prefix, i))
				if err != nil {
					errs[g] = err
					return
				}
				locks[i] = h
			}
		})
	}
	wg.Wait()
	require.NoError(t, errors.Join(errs...))
	extra := heldExtra{acquireWall: time.Since(start), stalls: int(stalls.Load())}
	registered := time.Now()
	r.heapAdded = float64(int64(heapAfterGC())-int64(h0)) / float64(n)
	var ms1 runtime.MemStats
	runtime.ReadMemStats(&ms1)
	extra.stackPerLock = float64(int64(ms1.StackInuse)-int64(ms0.StackInuse)) / float64(n)
	window(t, &r, ctl, "rueidislock:0:"+prefix, registered,
		func() (uint64, uint64, uint64) {
			s, o := p.cc.scripts.Load(), p.cc.ones.Load()
			return uint64(s), uint64(o), uint64(s - o)
		},
		func(from, to time.Time) durs { return nil })
	r.heapSteady = float64(int64(heapAfterGC())-int64(h0)) / float64(n)
	t.Logf("rueidislock: %d locks held after %v, %d WithContext calls given up after %v", n, extra.acquireWall, extra.stalls, rlHeldCallMax)
	for _, l := range locks {
		if l.ctx.Err() == nil {
			r.remaining++
		} else {
			r.lostNotHeld++
		}
	}
	next.Store(0)
	for range thrWorkers {
		wg.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				locks[i].cancel()
			}
		})
	}
	wg.Wait()
	return r, extra
}
