package main

import (
	"context"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/rueidis"
)

// maxPeriodLines is how many report periods the summary lists one by one.
const maxPeriodLines = 15

// jobRun is one run of the scheduled report, as its worker reported it.
type jobRun struct {
	worker int
	period int64
	stock  int64
}

// demoResult is what the demo measured and read back.
type demoResult struct {
	initial int
	started time.Time
	elapsed time.Duration
	reports map[int]*workerReport // by worker number
	jobs    []jobRun

	finalStock int64
	orders     int64           // SCARD of the order set
	runs       map[int64]int64 // report runs per period, as counted in Redis
}

// readFinal reads the final stock, orders and report runs from Redis.
func (r *demoResult) readFinal(ctx context.Context, rc rueidis.Client, k demoKeys) error {
	res := rc.DoMulti(ctx,
		rc.B().Get().Key(k.stock).Build(),
		rc.B().Scard().Key(k.orders).Build(),
		rc.B().Hgetall().Key(k.runs).Build())
	var err error
	if r.finalStock, err = res[0].AsInt64(); err != nil {
		return fmt.Errorf("read the final stock: %w", err)
	}
	if r.orders, err = res[1].AsInt64(); err != nil {
		return fmt.Errorf("count the orders: %w", err)
	}
	runs, err := res[2].AsIntMap()
	if err != nil {
		return fmt.Errorf("read the report runs: %w", err)
	}
	r.runs = map[int64]int64{}
	for p, n := range runs {
		period, err := strconv.ParseInt(p, 10, 64)
		if err != nil {
			return fmt.Errorf("report runs: bad period %q", p)
		}
		r.runs[period] = n
	}
	return nil
}

// print writes the summary and reports whether every check passed.
func (r *demoResult) print(w io.Writer, o demoOpts, redisWhat string) bool {
	var tot workerReport
	for _, rep := range r.reports {
		tot.Acquisitions += rep.Acquisitions
		tot.Waits += rep.Waits
		tot.Sold += rep.Sold
		tot.Resent += rep.Resent
		tot.DuplicatesRejected += rep.DuplicatesRejected
		tot.FencedRefused += rep.FencedRefused
		tot.JobRuns += rep.JobRuns
		tot.WaitMicros = append(tot.WaitMicros, rep.WaitMicros...)
		tot.HandoffMicros = append(tot.HandoffMicros, rep.HandoffMicros...)
	}
	var failures []string
	check := func(ok bool, failure string) string {
		if ok {
			return "ok"
		}
		failures = append(failures, failure)
		return "FAILED"
	}
	line := func(label, value, verdict string) {
		if verdict != "" {
			fmt.Fprintf(w, "  %-22s %-10s %s\n", label, value, verdict)
		} else {
			fmt.Fprintf(w, "  %-22s %s\n", label, value)
		}
	}

	mode := "under lock:stock:" + o.product
	if o.unsafe {
		mode = "WITHOUT the lock (--unsafe)"
	}
	fmt.Fprintf(w, "\nInventory demo: product %s, %d processes x %d goroutines, %s\n", o.product, o.processes, o.goroutines, mode)
	fmt.Fprintf(w, "Redis: %s\n\n", redisWhat)

	line("initial stock", strconv.Itoa(r.initial), "")
	line("final stock", strconv.FormatInt(r.finalStock, 10),
		check(r.finalStock == 0, fmt.Sprintf("final stock is %d, not 0", r.finalStock))+": must be exactly 0")
	soldVerdict := check(tot.Sold == r.initial, fmt.Sprintf("%d units sold for a stock of %d", tot.Sold, r.initial))
	switch {
	case tot.Sold > r.initial:
		soldVerdict += fmt.Sprintf(": OVERSOLD by %d (lost updates of the stock)", tot.Sold-r.initial)
	case tot.Sold < r.initial:
		soldVerdict += fmt.Sprintf(": %d units unsold", r.initial-tot.Sold)
	default:
		soldVerdict += ": sold == initial stock, no oversell"
	}
	line("units sold", strconv.Itoa(tot.Sold), soldVerdict)
	line("orders recorded", strconv.FormatInt(r.orders, 10),
		check(r.orders == int64(tot.Sold), fmt.Sprintf("%d sales but %d distinct orders: an order was sold twice", tot.Sold, r.orders))+
			": one distinct order per unit sold, no duplicate order")
	line("resent orders", fmt.Sprintf("%d", tot.Resent),
		check(tot.DuplicatesRejected == tot.Resent, fmt.Sprintf("%d orders resent, %d rejected", tot.Resent, tot.DuplicatesRejected))+
			fmt.Sprintf(": %d rejected as already recorded (same order id sent twice)", tot.DuplicatesRejected))
	if !o.unsafe {
		line("lock acquisitions", strconv.Itoa(tot.Acquisitions), "(sales, rejected resends, and each buyer's last look at an empty stock)")
		line("acquisitions waited", fmt.Sprintf("%d (%s)", tot.Waits, pct(tot.Waits, tot.Acquisitions)), "(TryLock with no wait failed, then Lock waited)")
		line("fenced writes refused", strconv.Itoa(tot.FencedRefused), "(a write whose token was older than one already written; none without pauses)")
		line("wait latency", latencies(tot.WaitMicros), "")
		line("handoff latency", latencies(tot.HandoffMicros), "")
		fmt.Fprintln(w, "                         wait: time in TryLock+Lock of acquisitions that waited;")
		fmt.Fprintln(w, "                         handoff: previous holder's last write -> next holder acquires")
	}

	// The scheduled report: exactly one run per period, none missing between the first and last.
	periods := make([]int64, 0, len(r.runs))
	for p := range r.runs {
		periods = append(periods, p)
	}
	slices.Sort(periods)
	bad := 0
	if len(periods) > 0 {
		for p := periods[0]; p <= periods[len(periods)-1]; p++ {
			if r.runs[p] != 1 {
				bad++
			}
		}
	}
	span := 0
	if len(periods) > 0 {
		span = int(periods[len(periods)-1]-periods[0]) + 1
	}
	var jobVerdict string
	switch {
	case len(periods) == 0 && r.elapsed < 2*o.period:
		jobVerdict = "ok" // too short a run to be sure a period started while buyers ran
	case len(periods) == 0:
		jobVerdict = check(false, fmt.Sprintf("no report ran in %v with a period of %v", r.elapsed.Round(time.Millisecond), o.period))
	default:
		jobVerdict = check(bad == 0, fmt.Sprintf("%d of %d report periods did not have exactly one run", bad, span))
	}
	line("report runs", strconv.Itoa(tot.JobRuns), jobVerdict+fmt.Sprintf(
		": one run in each of %d periods of %v (every process tries TryLock with no wait; one wins)", span, o.period))
	byPeriod := map[int64][]jobRun{}
	for _, j := range r.jobs {
		byPeriod[j.period] = append(byPeriod[j.period], j)
	}
	if len(periods) > 0 {
		for p := periods[0]; p <= periods[len(periods)-1]; p++ {
			if n := p - periods[0]; n >= maxPeriodLines && r.runs[p] == 1 {
				continue // long runs: list the first periods and any bad one
			}
			var by []string
			for _, j := range byPeriod[p] {
				by = append(by, fmt.Sprintf("worker %d (stock %d)", j.worker, j.stock))
			}
			if len(by) == 0 {
				by = []string{"-"}
			}
			fmt.Fprintf(w, "    period %-3d %d run(s)  %s\n", p-periods[0]+1, r.runs[p], strings.Join(by, ", "))
		}
	}
	if span > maxPeriodLines {
		fmt.Fprintf(w, "    (periods after the first %d are listed only when they did not have exactly one run)\n", maxPeriodLines)
	}
	if tot.JobRuns != sumRuns(r.runs) {
		failures = append(failures, fmt.Sprintf("workers reported %d report runs, Redis counted %d", tot.JobRuns, sumRuns(r.runs)))
	}
	line("elapsed", r.elapsed.Round(time.Millisecond).String(), "")
	fmt.Fprintln(w)
	if len(failures) > 0 {
		fmt.Fprintf(w, "Result: FAILED: %s\n", strings.Join(failures, "; "))
		if o.unsafe {
			fmt.Fprintln(w, "(expected with --unsafe: that is what the lock prevents)")
		}
		return false
	}
	fmt.Fprintln(w, "Result: OK: final stock 0, no oversell, no duplicate order, one report per period")
	return true
}

func sumRuns(m map[int64]int64) int {
	n := 0
	for _, v := range m {
		n += int(v)
	}
	return n
}

func pct(n, of int) string {
	if of == 0 {
		return "0%"
	}
	return fmt.Sprintf("%.0f%%", 100*float64(n)/float64(of))
}

// latencies renders p50/p90/p99/max of samples in microseconds.
func latencies(us []int64) string {
	if len(us) == 0 {
		return "n/a (no sample)"
	}
	s := slices.Clone(us)
	slices.Sort(s)
	d := func(v int64) string { return fmtLatency(time.Duration(v) * time.Microsecond) }
	return fmt.Sprintf("p50 %-8s p90 %-8s p99 %-8s max %-8s (%d samples)",
		d(percentile(s, 50)), d(percentile(s, 90)), d(percentile(s, 99)), d(s[len(s)-1]), len(s))
}

// percentile returns the nearest-rank percentile p of sorted samples.
func percentile(sorted []int64, p float64) int64 {
	if len(sorted) == 0 {
		return 0
	}
	i := int(math.Ceil(p/100*float64(len(sorted)))) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}

// fmtLatency rounds d to about three significant digits.
func fmtLatency(d time.Duration) string {
	switch {
	case d < time.Millisecond:
		return d.Round(time.Microsecond).String()
	case d < 10*time.Millisecond:
		return d.Round(10 * time.Microsecond).String()
	case d < time.Second:
		return d.Round(100 * time.Microsecond).String()
	}
	return d.Round(time.Millisecond).String()
}

// printContrast prints the short summary of the round without the lock.
func (r *demoResult) printContrast(w io.Writer, o demoOpts) {
	sold := 0
	for _, rep := range r.reports {
		sold += rep.Sold
	}
	fmt.Fprintf(w, "\nWithout the lock: %d processes x %d goroutines sold %d units of a stock of %d", o.processes, o.goroutines, sold, r.initial)
	if over := sold - r.initial; over > 0 {
		fmt.Fprintf(w, ": OVERSOLD by %d (lost updates of the stock)", over)
	}
	fmt.Fprintf(w, "; final stock %d, %d distinct orders.\n", r.finalStock, r.orders)
}
