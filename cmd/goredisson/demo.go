package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/redis/rueidis"
	"github.com/spf13/cobra"
)

const demoLong = `Demo runs the inventory case of goredisson on real processes.

  - It fills the stock of product P (--stock units, key demo:stock:P) and starts --processes
    worker processes (this same binary, re-executed as a hidden "demo-worker"), each with
    --goroutines buyers. A buyer repeatedly buys one unit under the lock "lock:stock:P":
    it reads the stock and checks that the order id is not recorded yet, waits --work (a
    slow inventory system), then writes stock-1 and records the order. That read-check-write
    oversells without the lock (try --unsafe). About one order in ten (--resend) is sent
    again with the same id, as a client that lost the reply would, and must be rejected.
    Buyers stop when they see the stock at 0.
  - Every process also runs a scheduled "nightly report", compressed to one per
    --report-every period: at each period start every process calls
    TryLock(wait 0, lease = one period) on "lock:report:P:<period>", and only the winner runs
    it. Each period must get exactly one run.
  - Unless --unsafe or --no-contrast, a short first round sells 60 units WITHOUT the lock
    and shows the oversell it gets; the real round follows, under the lock.
  - The lock is a fenced lock: every sale's stock write carries the acquisition's token,
    and the store (a script) refuses a write whose token is smaller than one it already
    took, as a resource guarded by a lock should: a holder paused past its lease cannot
    overwrite a later holder's sale. The summary counts refused writes.
  - The parent shows a progress bar (units sold / initial stock), collects each worker's
    numbers (JSON lines on the worker's stdout), and prints a summary: initial and final
    stock (final must be 0), units sold and orders recorded (must equal the initial stock:
    no oversell, no duplicate order), lock acquisitions and how many had to wait, wait and
    handoff latency percentiles (p50/p90/p99), and report runs per period.

Latencies: "wait" is how long a buyer spent in TryLock+Lock when the lock was taken (only
acquisitions that had to wait); "handoff" is from the previous holder's last write to the
next holder's acquisition, which includes the release, the pub/sub wake-up and the retry.
Both are measured with the machine's clock across processes.

Redis: --redis or REDIS_URL; the demo then writes only keys named demo:*:P, lock:stock:P
and lock:report:P:*, resets them at the start and deletes them at the end. Without either,
it starts a throwaway Redis on 127.0.0.1 and removes it on exit, Ctrl-C included:
  - a container of the locally built image goredisson/redis:7.0.15 when a Docker engine
    answers and the image exists (TESTCONTAINERS_RYUK_DISABLED=true and
    TESTCONTAINERS_HOST_OVERRIDE=127.0.0.1 are set unless already set; the container is
    labelled io.goredisson.demo=true);
  - else redis-server from PATH on a free loopback port, without persistence, stopped by
    its pid;
  - else it says how to get one (apt-get install -y redis-server, or dockerd +
    bash scripts/redis-image/build.sh).
GOREDISSON_REDIS=process (or =container) forces one of the two ways, as in the project's
tests; a container left behind by a killed demo is removed with
  docker rm -f $(docker ps -aq --filter label=io.goredisson.demo=true)

Exit code 1 also when a check fails (oversell, duplicate order, a period without exactly
one report), which is the expected outcome of --unsafe.`

// demoOpts are the settings of `goredisson demo`.
type demoOpts struct {
	buyerOpts
	processes  int
	stock      int
	maxTime    time.Duration
	noProgress bool
	noContrast bool // skip the default run's first round without the lock
}

func (a *app) demoCommand() *cobra.Command {
	var o demoOpts
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "Run the inventory demo: processes sell stock under a lock, checked for oversell",
		Long:  demoLong,
		Example: `  # Defaults: 3 processes x 4 goroutines sell 500 units, on a throwaway Redis (~6 s)
  goredisson demo

  # More contention: 4 processes x 8 goroutines, less think time
  goredisson demo --processes 4 --goroutines 8 --think 20ms

  # Against your Redis (keys demo:*:42, lock:stock:42, lock:report:42:*)
  goredisson demo --redis 127.0.0.1:6379 --product 42

  # Without the lock: watch it oversell (exit code 1)
  goredisson demo --unsafe --stock 200

  # While it runs, from another terminal: who holds the lock now?
  goredisson --redis 127.0.0.1:6379 inspect lock:stock:42`,
		Args: usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.runDemo(cmd.Context(), o)
		},
	}
	f := cmd.Flags()
	o.buyerOpts.register(f)
	f.IntVar(&o.processes, "processes", 3, "worker processes")
	f.IntVar(&o.stock, "stock", 500, "initial stock: units to sell")
	f.DurationVar(&o.maxTime, "max-time", 2*time.Minute, "give up (exit 1) if the demo runs longer")
	f.BoolVar(&o.noProgress, "no-progress", false, "no progress bar")
	f.BoolVar(&o.noContrast, "no-contrast", false, "skip the first, short round without the lock")
	return cmd
}

func (o demoOpts) validate() error {
	switch {
	case o.processes < 1 || o.processes > 64:
		return usagef("--processes must be 1-64, got %d", o.processes)
	case o.goroutines < 1 || o.goroutines > 1000:
		return usagef("--goroutines must be 1-1000, got %d", o.goroutines)
	case o.stock < 1 || o.stock > 1_000_000:
		return usagef("--stock must be 1-1000000, got %d", o.stock)
	case o.product == "" || strings.ContainsAny(o.product, " \t\n{}"):
		return usagef("--product must be a non-empty id without spaces or braces, got %q", o.product)
	case o.think < 0 || o.work < 0:
		return usagef("--think and --work must not be negative")
	case o.period < 10*time.Millisecond:
		return usagef("--report-every must be at least 10ms, got %v", o.period)
	case o.resend < 0 || o.resend > 1:
		return usagef("--resend must be between 0 and 1, got %v", o.resend)
	case o.maxTime <= 0:
		return usagef("--max-time must be positive")
	}
	return nil
}

// workerProc is one running worker process, seen from the parent.
type workerProc struct {
	index  int
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	exited chan struct{} // closed when cmd.Wait returned
	err    error         // cmd.Wait's error
}

// workerEvent is an event read from a worker's stdout.
type workerEvent struct {
	index int
	ev    event
}

func (a *app) runDemo(ctx context.Context, o demoOpts) error {
	if err := o.validate(); err != nil {
		return err
	}
	t, given, err := a.target("")
	if err != nil {
		return err
	}
	stderr := &lockedWriter{w: a.stderr}
	redisWhat := t.display + " (from " + t.source + ")"
	if !given {
		fmt.Fprintln(stderr, "No --redis and no REDIS_URL: starting a throwaway Redis on 127.0.0.1 ...")
		sctx, cancel := context.WithTimeout(ctx, time.Minute)
		tw, err := startThrowaway(sctx)
		cancel()
		if err != nil {
			return err
		}
		defer func() {
			sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
			defer cancel()
			if err := tw.Stop(sctx); err != nil {
				fmt.Fprintf(stderr, "could not remove the throwaway Redis (%s): %v\n", tw.Describe(), err)
				return
			}
			fmt.Fprintf(stderr, "throwaway Redis removed (%s)\n", tw.Describe())
		}()
		fmt.Fprintf(stderr, "throwaway Redis: %s on %s (removed on exit, Ctrl-C included)\n", tw.Describe(), tw.Addr)
		t = redisTarget{raw: "redis://" + tw.Addr, source: "throwaway", display: tw.Addr,
			opt: rueidis.ClientOption{InitAddress: []string{tw.Addr}}}
		redisWhat = tw.Addr + " (throwaway " + tw.Describe() + ")"
	}
	rc, err := a.connect(ctx, t)
	if err != nil {
		return err
	}
	defer rc.Close()
	if v := redisVersion(ctx, rc); v != "" {
		redisWhat = "Redis " + v + " at " + redisWhat
	}

	k := newDemoKeys(o.product)
	defer func() {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		rc.DoMulti(cctx, delEach(rc, k.data())...)
	}()
	if !o.unsafe && !o.noContrast {
		u := o
		u.unsafe, u.stock, u.noProgress = true, min(o.stock, contrastStock), true
		fmt.Fprintf(stderr, "First a short round WITHOUT the lock (%d units), to show what the lock prevents ...\n", u.stock)
		res, err := a.demoRound(ctx, rc, t, k, u, stderr)
		if err != nil {
			return err
		}
		res.printContrast(a.stdout, u)
	}
	res, err := a.demoRound(ctx, rc, t, k, o, stderr)
	if err != nil {
		return err
	}
	ok := res.print(a.stdout, o, redisWhat)
	if !ok {
		return silent(exitFailure)
	}
	return nil
}

// contrastStock is the stock of the default run's first round, without the lock.
const contrastStock = 60

// demoRound resets the demo's keys, runs the workers with o until the stock is sold, and
// reads back what they left.
func (a *app) demoRound(ctx context.Context, rc rueidis.Client, t redisTarget, k demoKeys, o demoOpts, stderr io.Writer) (*demoResult, error) {
	if err := a.prepareDemo(ctx, rc, k, o); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, o.maxTime)
	defer cancel()
	procs, events, err := a.startWorkers(ctx, t, o, stderr)
	defer func() {
		if events != nil {
			go func() { // readers must never block on a full channel while workers are stopped
				for range events {
				}
			}()
		}
		stopWorkers(procs)
	}()
	if err != nil {
		return nil, err
	}
	res, err := a.watchWorkers(ctx, rc, k, o, procs, events, stderr)
	if err != nil {
		if ctx.Err() == context.DeadlineExceeded {
			return nil, fmt.Errorf("the demo did not finish within --max-time %v: %w", o.maxTime, err)
		}
		return nil, err
	}
	if err := res.readFinal(ctx, rc, k); err != nil {
		return nil, err
	}
	return res, nil
}

// prepareDemo resets the demo's keys and fills the stock. It refuses to run while the
// product's lock is held: another demo may be selling the same product.
func (a *app) prepareDemo(ctx context.Context, rc rueidis.Client, k demoKeys, o demoOpts) error {
	ctx, cancel := a.stepContext(ctx)
	defer cancel()
	held, err := rc.Do(ctx, rc.B().Exists().Key(k.lock).Build()).AsInt64()
	if err != nil {
		return fmt.Errorf("EXISTS %s: %w", k.lock, err)
	}
	if held == 1 {
		return fmt.Errorf("%s is held: is another demo selling product %s? "+
			"See `goredisson inspect %s`, or use another --product", k.lock, o.product, k.lock)
	}
	cmds := delEach(rc, k.data())
	cmds = append(cmds, rc.B().Set().Key(k.stock).Value(strconv.Itoa(o.stock)).Build())
	for _, r := range rc.DoMulti(ctx, cmds...) {
		if err := r.Error(); err != nil {
			return fmt.Errorf("prepare the stock: %w", err)
		}
	}
	return nil
}

// startWorkers re-executes this binary as demo-worker o.processes times and waits until
// every worker is ready, then tells them all to go at once.
func (a *app) startWorkers(ctx context.Context, t redisTarget, o demoOpts, stderr io.Writer) ([]*workerProc, <-chan workerEvent, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, nil, fmt.Errorf("find this binary to start workers: %w", err)
	}
	env := append(os.Environ(), envRedisURL+"="+t.raw) // not in argv: a URL may hold a password
	events := make(chan workerEvent, 64)
	var readers sync.WaitGroup
	var closeOnce sync.Once
	closeAfterReaders := func() { // once no reader can be added: close events after the last one
		closeOnce.Do(func() {
			go func() {
				readers.Wait()
				close(events)
			}()
		})
	}
	defer closeAfterReaders()
	var procs []*workerProc
	for i := 1; i <= o.processes; i++ {
		args := append([]string{"demo-worker", "--timeout", a.timeout.String(), "--worker", strconv.Itoa(i)},
			o.buyerOpts.args()...)
		cmd := exec.Command(exe, args...)
		cmd.Env = env
		cmd.Stderr = &prefixWriter{w: stderr, prefix: fmt.Sprintf("worker %d: ", i)}
		cmd.SysProcAttr = childAttr()
		stdin, err := cmd.StdinPipe()
		if err != nil {
			return procs, events, err
		}
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			return procs, events, err
		}
		if err := cmd.Start(); err != nil {
			return procs, events, fmt.Errorf("start worker %d (%s): %w", i, exe, err)
		}
		p := &workerProc{index: i, cmd: cmd, stdin: stdin, exited: make(chan struct{})}
		procs = append(procs, p)
		readers.Add(1)
		go func() {
			defer readers.Done()
			sc := bufio.NewScanner(stdout)
			sc.Buffer(make([]byte, 64*1024), 64*1024*1024)
			for sc.Scan() {
				var ev event
				if err := json.Unmarshal(sc.Bytes(), &ev); err != nil || ev.Type == "" {
					fmt.Fprintf(stderr, "worker %d (not JSON): %s\n", p.index, sc.Text())
					continue
				}
				events <- workerEvent{index: p.index, ev: ev}
			}
			_, _ = io.Copy(io.Discard, stdout)
			p.err = cmd.Wait() // after stdout is drained, as exec requires
			close(p.exited)
		}()
	}
	closeAfterReaders()
	ready := 0
	timeout := time.After(30 * time.Second)
	for ready < len(procs) {
		select {
		case we, ok := <-events:
			if !ok {
				return procs, events, errors.New("workers exited before they were ready (see their errors above)")
			}
			if we.ev.Type == "ready" {
				ready++
			}
		case <-timeout:
			return procs, events, errors.New("workers not ready within 30s")
		case <-ctx.Done():
			return procs, events, ctx.Err()
		}
	}
	for _, p := range procs {
		if _, err := io.WriteString(p.stdin, "go\n"); err != nil {
			return procs, events, fmt.Errorf("start worker %d: %w", p.index, err)
		}
	}
	return procs, events, nil
}

// stopWorkers ends the workers still running: SIGTERM (they give back their locks), then
// SIGKILL after 3 s; and waits for every worker to exit.
func stopWorkers(procs []*workerProc) {
	for _, p := range procs {
		select {
		case <-p.exited:
		default:
			_ = p.cmd.Process.Signal(syscall.SIGTERM)
		}
	}
	deadline := time.After(3 * time.Second)
	for _, p := range procs {
		select {
		case <-p.exited:
		case <-deadline:
			_ = p.cmd.Process.Kill()
			<-p.exited
		}
		_ = p.stdin.Close()
	}
}

// watchWorkers shows progress until every worker has exited and collects their events.
func (a *app) watchWorkers(ctx context.Context, rc rueidis.Client, k demoKeys, o demoOpts,
	procs []*workerProc, events <-chan workerEvent, stderr io.Writer) (*demoResult, error) {
	res := &demoResult{initial: o.stock, started: time.Now(), reports: map[int]*workerReport{}}
	prog := newProgress(stderr, int64(o.stock), o.noProgress)
	defer prog.done()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for events != nil {
		select {
		case we, ok := <-events:
			if !ok {
				events = nil
				break
			}
			switch we.ev.Type {
			case "report":
				res.reports[we.index] = we.ev.Report
			case "job":
				res.jobs = append(res.jobs, jobRun{worker: we.index, period: we.ev.Period, stock: we.ev.Stock})
			}
		case <-tick.C:
			if left, err := rc.Do(ctx, rc.B().Get().Key(k.stock).Build()).AsInt64(); err == nil {
				prog.set(int64(o.stock) - left)
			}
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	res.elapsed = time.Since(res.started)
	var errs []error
	for _, p := range procs {
		<-p.exited
		if p.err != nil {
			errs = append(errs, fmt.Errorf("worker %d: %w", p.index, p.err))
		} else if res.reports[p.index] == nil {
			errs = append(errs, fmt.Errorf("worker %d exited without its report", p.index))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	prog.set(int64(o.stock))
	return res, nil
}

// delEach returns one DEL per key: the keys may live in different Redis Cluster slots.
func delEach(rc rueidis.Client, keys []string) []rueidis.Completed {
	cmds := make([]rueidis.Completed, len(keys))
	for i, key := range keys {
		cmds[i] = rc.B().Del().Key(key).Build()
	}
	return cmds
}

// redisVersion returns the server's redis_version, or "" when INFO does not say.
func redisVersion(ctx context.Context, rc rueidis.Client) string {
	info, err := rc.Do(ctx, rc.B().Info().Section("server").Build()).ToString()
	if err != nil {
		return ""
	}
	for line := range strings.SplitSeq(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "redis_version:"); ok {
			return v
		}
	}
	return ""
}

// lockedWriter serialises writes from several goroutines.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// prefixWriter writes each complete line with a prefix.
type prefixWriter struct {
	mu     sync.Mutex
	w      io.Writer
	prefix string
	buf    []byte
}

func (p *prefixWriter) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.buf = append(p.buf, b...)
	for {
		i := strings.IndexByte(string(p.buf), '\n')
		if i < 0 {
			return len(b), nil
		}
		if _, err := fmt.Fprintf(p.w, "%s%s\n", p.prefix, p.buf[:i]); err != nil {
			return len(b), err
		}
		p.buf = p.buf[i+1:]
	}
}
