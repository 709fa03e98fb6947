package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/rueidis"
	"github.com/spf13/cobra"

	"github.com/goredisson/goredisson/rlock"
)

// The demo's parent and its workers talk in JSON lines: the parent writes "go\n" on a
// worker's stdin when every worker is ready; each worker writes events on its stdout.

// event is one line a worker writes on stdout.
type event struct {
	Type     string        `json:"type"` // "ready", "job", "report"
	Worker   int           `json:"worker"`
	PID      int           `json:"pid,omitempty"`
	ClientID string        `json:"client_id,omitempty"` // ready: the rlock client id
	Period   int64         `json:"period,omitempty"`    // job: the period number
	Stock    int64         `json:"stock,omitempty"`     // job: stock seen by the report
	Orders   int64         `json:"orders,omitempty"`    // job: orders seen by the report
	Report   *workerReport `json:"report,omitempty"`
}

// workerReport is a worker's final numbers.
type workerReport struct {
	Acquisitions       int     `json:"acquisitions"`        // purchase lock acquisitions
	Waits              int     `json:"waits"`               // of which had to wait (TryLock(0) failed)
	Sold               int     `json:"sold"`                // units sold (orders accepted)
	Resent             int     `json:"resent"`              // orders sent again with the same id
	DuplicatesRejected int     `json:"duplicates_rejected"` // orders refused as already recorded
	FencedRefused      int     `json:"fenced_refused"`      // stock writes refused: their token was stale
	JobRuns            int     `json:"job_runs"`            // report runs by this worker
	WaitMicros         []int64 `json:"wait_us"`             // time in TryLock+Lock, for waits
	HandoffMicros      []int64 `json:"handoff_us"`          // previous holder's last write -> acquired, for waits
}

// workerOpts are the settings of one demo-worker process.
type workerOpts struct {
	buyerOpts
	index int
}

func (a *app) demoWorkerCommand() *cobra.Command {
	var o workerOpts
	cmd := &cobra.Command{
		Use:    "demo-worker",
		Short:  "One worker process of the demo (started by demo; not for direct use)",
		Hidden: true,
		Args:   usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.runWorker(cmd.Context(), o)
		},
	}
	f := cmd.Flags()
	f.IntVar(&o.index, "worker", 1, "worker number")
	o.buyerOpts.register(f)
	return cmd
}

// worker is one demo-worker process.
type worker struct {
	o    workerOpts
	k    demoKeys
	rc   rueidis.Client
	lc   *rlock.Client
	lock *rlock.FencedLock

	outMu sync.Mutex
	out   *json.Encoder

	mu  sync.Mutex
	rep workerReport
}

func (a *app) runWorker(ctx context.Context, o workerOpts) error {
	t, given, err := a.target("")
	if err != nil {
		return err
	}
	if !given {
		return usagef("demo-worker needs --redis or REDIS_URL (it is started by `goredisson demo`)")
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	rc, err := a.connect(ctx, t)
	if err != nil {
		return err
	}
	defer rc.Close()
	lc, err := rlock.New(ctx, rc, rlock.Options{})
	if err != nil {
		return err
	}
	defer lc.Close()
	w := &worker{o: o, k: newDemoKeys(o.product), rc: rc, lc: lc, out: json.NewEncoder(a.stdout)}
	w.lock = lc.NewFencedLock(w.k.lock)
	if err := w.emit(event{Type: "ready", PID: os.Getpid(), ClientID: lc.ID()}); err != nil {
		return err
	}

	// Wait for "go"; afterwards stdin's end means the parent is gone.
	in := bufio.NewReader(a.stdin)
	line, err := in.ReadString('\n')
	if strings.TrimSpace(line) != "go" {
		return fmt.Errorf("worker %d: expected \"go\" on stdin, got %q (%v)", o.index, line, err)
	}
	go func() {
		_, _ = io.Copy(io.Discard, in)
		cancel()
	}()

	buyersDone := make(chan struct{})
	jobDone := make(chan struct{})
	go func() {
		defer close(jobDone)
		w.scheduler(ctx, buyersDone)
	}()
	var wg sync.WaitGroup
	errs := make([]error, o.goroutines)
	for g := range o.goroutines {
		wg.Go(func() { errs[g] = w.buyer(ctx, g+1) })
	}
	wg.Wait()
	close(buyersDone)
	<-jobDone
	if ctx.Err() != nil {
		return silent(exitInterrupted) // stopped by the parent: it says why
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	w.mu.Lock()
	rep := w.rep
	w.mu.Unlock()
	return w.emit(event{Type: "report", Report: &rep})
}

func (w *worker) emit(ev event) error {
	ev.Worker = w.o.index
	w.outMu.Lock()
	defer w.outMu.Unlock()
	return w.out.Encode(ev)
}

// buyer is one customer-facing goroutine: it buys one unit at a time until the stock is 0.
func (w *worker) buyer(ctx context.Context, g int) error {
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), uint64(w.o.index*1000+g)))
	seq, resend := 0, ""
	for {
		if err := sleepCtx(ctx, jitter(rng, w.o.think)); err != nil {
			return nil // stopped
		}
		order := resend
		if order == "" {
			seq++
			order = fmt.Sprintf("w%d-g%d-%d", w.o.index, g, seq)
		} else {
			w.count(func(r *workerReport) { r.Resent++ })
		}
		resend = ""
		res, err := w.buyOnce(ctx, order)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("worker %d buyer %d: %w", w.o.index, g, err)
		}
		switch res {
		case soldOut:
			return nil
		case bought:
			if rng.Float64() < w.o.resend {
				resend = order // as a client that lost the reply would send it again
			}
		}
	}
}

type buyResult int

const (
	bought buyResult = iota
	duplicate
	soldOut
	fenced // the write was refused: a later holder's token was already written
)

// buyOnce takes the lock, checks the order id and the stock, and sells one unit.
func (w *worker) buyOnce(ctx context.Context, order string) (buyResult, error) {
	ctx = rlock.NewOwner(ctx) // one owner per purchase, like one request
	rc := w.rc
	start := time.Now()
	waited := false
	var token int64 // 0 without the lock: the store takes any write
	if !w.o.unsafe {
		var err error
		token, err = w.lock.TryLock(ctx, 0, 0)
		if errors.Is(err, rlock.ErrLocked) {
			waited = true
			token, err = w.lock.Lock(ctx)
		}
		if err != nil {
			return 0, err
		}
	}
	acquired := time.Now()

	res, err := w.critical(ctx, order, token, func(releasedAt int64) {
		w.count(func(r *workerReport) {
			if w.o.unsafe {
				return
			}
			r.Acquisitions++
			if waited {
				r.Waits++
				r.WaitMicros = append(r.WaitMicros, acquired.Sub(start).Microseconds())
				if releasedAt > 0 && acquired.UnixNano() > releasedAt {
					r.HandoffMicros = append(r.HandoffMicros, (acquired.UnixNano()-releasedAt)/1000)
				}
			}
		})
	})
	// The last write of every critical section: when this holder let go.
	released := rc.Do(ctx, rc.B().Set().Key(w.k.releaseAt).Value(strconv.FormatInt(time.Now().UnixNano(), 10)).Build()).Error()
	if !w.o.unsafe {
		if uerr := w.lock.Unlock(ctx); uerr != nil {
			return 0, errors.Join(err, fmt.Errorf("unlock %s: %w", w.k.lock, uerr))
		}
	}
	return res, errors.Join(err, released)
}

// critical is the part under the lock: a read-check-write that would oversell without it.
// The write carries the lock's fencing token: the store refuses it when a larger token
// was already written (the holder was paused past its lease and another took the lock).
func (w *worker) critical(ctx context.Context, order string, token int64, acquired func(releasedAt int64)) (buyResult, error) {
	rc := w.rc
	r := rc.DoMulti(ctx,
		rc.B().Get().Key(w.k.stock).Build(),
		rc.B().Get().Key(w.k.releaseAt).Build(),
		rc.B().Sismember().Key(w.k.orders).Member(order).Build())
	stock, err := r[0].AsInt64()
	if err != nil {
		return 0, fmt.Errorf("GET %s: %w", w.k.stock, err)
	}
	releasedAt, err := r[1].AsInt64()
	if err != nil && !rueidis.IsRedisNil(err) {
		return 0, fmt.Errorf("GET %s: %w", w.k.releaseAt, err)
	}
	acquired(releasedAt)
	known, err := r[2].AsBool()
	if err != nil {
		return 0, fmt.Errorf("SISMEMBER %s: %w", w.k.orders, err)
	}
	switch {
	case known:
		w.count(func(r *workerReport) { r.DuplicatesRejected++ })
		return duplicate, nil
	case stock <= 0:
		return soldOut, nil
	}
	if err := sleepCtx(ctx, w.o.work); err != nil { // a slow inventory system
		return 0, err
	}
	ok, err := fencedWrite.Exec(ctx, rc, []string{w.k.stock, w.k.orders, w.k.fence},
		[]string{strconv.FormatInt(stock-1, 10), order, strconv.FormatInt(token, 10)}).AsBool()
	if err != nil {
		return 0, fmt.Errorf("record order %s: %w", order, err)
	}
	if !ok {
		w.count(func(r *workerReport) { r.FencedRefused++ })
		return fenced, nil
	}
	w.count(func(r *workerReport) { r.Sold++ })
	return bought, nil
}

// fencedWrite is the store's write of a sale: KEYS stock, orders, fence; ARGV the new stock,
// the order id and the writer's fencing token. A token of 0 (no lock) is always written; a
// positive token smaller than the largest one written so far is refused (reply 0) and
// changes nothing.
var fencedWrite = rueidis.NewLuaScript(`
local token = tonumber(ARGV[3])
if token > 0 then
	if token < tonumber(redis.call('get', KEYS[3]) or '0') then
		return 0
	end
	redis.call('set', KEYS[3], ARGV[3])
end
redis.call('set', KEYS[1], ARGV[1])
redis.call('sadd', KEYS[2], ARGV[2])
return 1
`)

// scheduler runs the "nightly report" at the start of every period until the buyers are
// done. Every process ticks; TryLock with no wait lets exactly one of them run it.
func (w *worker) scheduler(ctx context.Context, done <-chan struct{}) {
	p := w.o.period
	for {
		next := periodStart(periodOf(time.Now(), p)+1, p)
		select {
		case <-ctx.Done():
			return
		case <-done:
			return
		case <-time.After(time.Until(next)):
		}
		period := periodOf(time.Now(), p)
		lock := w.lc.NewLock(w.k.reportLock(period))
		jctx := rlock.NewOwner(ctx)
		// No wait: another process already runs this period's report. The lease covers the
		// period and is never released early, so late ticks of the same period fail too.
		if err := lock.TryLock(jctx, 0, p); err != nil {
			continue
		}
		w.report(ctx, period)
	}
}

// report is the scheduled job: a snapshot of the stock, counted per period.
func (w *worker) report(ctx context.Context, period int64) {
	rc := w.rc
	r := rc.DoMulti(ctx,
		rc.B().Get().Key(w.k.stock).Build(),
		rc.B().Scard().Key(w.k.orders).Build(),
		rc.B().Hincrby().Key(w.k.runs).Field(strconv.FormatInt(period, 10)).Increment(1).Build())
	stock, _ := r[0].AsInt64()
	orders, _ := r[1].AsInt64()
	if err := r[2].Error(); err != nil {
		return
	}
	w.count(func(r *workerReport) { r.JobRuns++ })
	_ = w.emit(event{Type: "job", Period: period, Stock: stock, Orders: orders})
}

func (w *worker) count(f func(*workerReport)) {
	w.mu.Lock()
	defer w.mu.Unlock()
	f(&w.rep)
}

// jitter returns d scaled by a random factor in [0.5, 1.5).
func jitter(rng *rand.Rand, d time.Duration) time.Duration {
	return time.Duration(float64(d) * (0.5 + rng.Float64()))
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
