package integration

// The failover harness shared by the fast fault tests of cluster_test.go (F11) and
// sentinel_test.go (F10): a handoff whose waiter sleeps on the master that fails, and a
// lock/unlock load whose operations are recorded and checked around the fault window.

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/goredisson/goredisson/internal/redistest"
	"github.com/goredisson/goredisson/rlock"
)

// failoverHandoff is a holder with an explicit lease on one client and a waiter blocked on
// the same lock on another, set up before a failover so that the waiter sleeps on a
// subscription on the master that fails.
type failoverHandoff struct {
	hl, wl         *rlock.Lock
	hOwner, wOwner context.Context
	done           chan time.Time // when the waiter's Lock returned
	err            error          // the waiter's Lock, read once done has delivered
}

// startFailoverHandoff locks name on client a for lease and starts a waiter on it on client
// b, which may wait up to 40 s.
func startFailoverHandoff(t *testing.T, ctx context.Context, a, b *rlock.Client, name string, lease time.Duration) *failoverHandoff {
	t.Helper()
	h := &failoverHandoff{hOwner: rlock.NewOwner(ctx), wOwner: rlock.NewOwner(ctx), done: make(chan time.Time, 1)}
	h.hl, h.wl = a.NewLock(name), b.NewLock(name)
	require.NoError(t, h.hl.LockFor(h.hOwner, lease))
	go func() {
		wctx, wcancel := within(h.wOwner, 40*time.Second)
		defer wcancel()
		h.err = h.wl.Lock(wctx)
		h.done <- time.Now()
	}()
	return h
}

// release unlocks the holder after the failover and checks that the waiter then gets the
// lock: within 25 s in any case, and within 3 s of the unlock's return if the unlock
// succeeded (an unlock may itself wait, for its replicas or on a connection the client has
// not yet given up). The waiter then unlocks.
func (h *failoverHandoff) release(t *testing.T) {
	t.Helper()
	unlockAt := time.Now()
	herr := h.hl.Unlock(h.hOwner)
	unlocked := time.Now()
	t.Logf("holder's Unlock after the failover: %v (took %v)", herr, unlocked.Sub(unlockAt).Round(time.Millisecond))
	select {
	case at := <-h.done:
		require.NoError(t, h.err, "waiter's Lock")
		t.Logf("waiter acquired %v after the holder's unlock returned", at.Sub(unlocked).Round(time.Millisecond))
		if herr == nil {
			assert.Less(t, at.Sub(unlocked), 3*time.Second, "waiter woke late after the unlock on the new master")
		}
		require.NoError(t, h.wl.Unlock(h.wOwner))
	case <-time.After(25 * time.Second):
		t.Fatal("waiter still blocked 25 s after the holder's unlock")
	}
}

// loadConfig describes a lock/unlock load: workers goroutines, worker i on
// clients[i%len(clients)], each iteration acquiring names[(i+iteration)%len] for a newly
// minted owner, holding it for hold, releasing it, then pausing for every.
//
// The owner is minted per iteration (one task per cycle, as rlock's doc advises) and not per
// worker: a failover that loses a release leaves the releasing owner's hold count one too
// high on the new master, and an owner that keeps re-entering that name then keeps the
// orphaned hold alive for as long as it loops (each re-entry resets the TTL), starving every
// other owner. With one owner per cycle the orphan ends with its lease.
type loadConfig struct {
	workers   int
	names     []string
	clients   []*rlock.Client
	acquire   func(ctx context.Context, l *rlock.Lock) error
	opTimeout time.Duration // ctx deadline of each acquire
	hold      time.Duration
	every     time.Duration
	// stalls: the fault stalls connections rather than breaking them, so that an acquire
	// in flight when its ctx ends may wait up to the release timeout more for its reply
	// (rlock's documented bound); otherwise an acquire may take opTimeout plus 1 s.
	stalls bool
}

type opRecord struct {
	worker     int
	op         string // "acquire" or "unlock"
	name       string
	start, end time.Time
	err        error
}

// load runs a loadConfig and records every operation. An in-process overlap detector per name
// records a violation whenever a worker's acquire returns while another worker is between its
// own acquire and unlock.
type load struct {
	cfg      loadConfig
	stop     chan struct{}
	done     chan struct{}
	overlaps map[string]*redistest.Overlap

	mu         sync.Mutex
	ops        []opRecord
	violations []violation
	lost       []heldSpan // holds whose Unlock found them gone: a failover lost their write
}

// violation is an acquisition granted while another owner was inside.
type violation struct {
	name string
	at   time.Time
	text string
}

// heldSpan is the time a worker believed it held name.
type heldSpan struct {
	name     string
	from, to time.Time
}

func startLoad(t *testing.T, cfg loadConfig) *load {
	t.Helper()
	ld := &load{cfg: cfg, stop: make(chan struct{}), done: make(chan struct{}), overlaps: map[string]*redistest.Overlap{}}
	for _, n := range cfg.names {
		ld.overlaps[n] = new(redistest.Overlap)
	}
	locks := make([]map[string]*rlock.Lock, len(cfg.clients))
	for i, c := range cfg.clients {
		locks[i] = map[string]*rlock.Lock{}
		for _, n := range cfg.names {
			locks[i][n] = c.NewLock(n)
		}
	}
	var wg sync.WaitGroup
	for w := range cfg.workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ld.work(w, locks[w%len(locks)])
		}()
	}
	go func() { wg.Wait(); close(ld.done) }()
	t.Cleanup(func() { ld.finish(t) })
	return ld
}

func (ld *load) work(w int, locks map[string]*rlock.Lock) {
	for i := 0; ; i++ {
		select {
		case <-ld.stop:
			return
		default:
		}
		// One owner per iteration, as one task per lock/unlock cycle: see loadConfig.
		owner := rlock.NewOwner(context.Background())
		name := ld.cfg.names[(w+i)%len(ld.cfg.names)]
		l := locks[name]
		actx, cancel := within(owner, ld.cfg.opTimeout)
		start := time.Now()
		err := ld.cfg.acquire(actx, l)
		cancel()
		ld.record(opRecord{w, "acquire", name, start, time.Now(), err})
		if err == nil {
			acquired := time.Now()
			others, leave := ld.overlaps[name].Enter()
			if others != 0 {
				ld.violation(violation{name, acquired, fmt.Sprintf("worker %d acquired %s at %s with %d other holder(s) inside",
					w, name, acquired.Format("15:04:05.000"), others)})
			}
			time.Sleep(ld.cfg.hold)
			leave()
			start = time.Now()
			err = l.Unlock(owner)
			ld.record(opRecord{w, "unlock", name, start, time.Now(), err})
			if errors.Is(err, rlock.ErrNotHeld) {
				ld.lose(heldSpan{name, acquired, start})
			}
		}
		time.Sleep(ld.cfg.every)
	}
}

func (ld *load) record(r opRecord) {
	ld.mu.Lock()
	ld.ops = append(ld.ops, r)
	ld.mu.Unlock()
}

func (ld *load) violation(v violation) {
	ld.mu.Lock()
	ld.violations = append(ld.violations, v)
	ld.mu.Unlock()
}

func (ld *load) lose(h heldSpan) {
	ld.mu.Lock()
	ld.lost = append(ld.lost, h)
	ld.mu.Unlock()
}

// unexplained returns the overlaps that no lost hold explains: an overlap on a name while a
// hold of it was lost to a failover (its Unlock found it gone) is the documented limit of
// asynchronous replication, not a broken exclusion.
func (ld *load) unexplained() (bad []string, explained int) {
	ld.mu.Lock()
	defer ld.mu.Unlock()
	for _, v := range ld.violations {
		if slices.ContainsFunc(ld.lost, func(h heldSpan) bool {
			return h.name == v.name && !v.at.Before(h.from) && !v.at.After(h.to)
		}) {
			explained++
			continue
		}
		bad = append(bad, v.text)
	}
	return bad, explained
}

func (ld *load) records() []opRecord {
	ld.mu.Lock()
	defer ld.mu.Unlock()
	return slices.Clone(ld.ops)
}

// finish stops the workers and waits for them; an operation that does not return within its
// bound (acquire: opTimeout; unlock: the release timeout, 5 s) plus slack is a hang.
func (ld *load) finish(t *testing.T) {
	t.Helper()
	select {
	case <-ld.stop:
	default:
		close(ld.stop)
	}
	bound := ld.cfg.opTimeout + rlock.DefaultReleaseTimeout + ld.cfg.hold + ld.cfg.every + 5*time.Second
	select {
	case <-ld.done:
	case <-time.After(bound):
		t.Fatalf("load workers still running %v after stop: an operation hangs", bound)
	}
}

// waitSuccessesAfter waits until every worker has completed n acquire+unlock cycles that
// started at or after from, failing t when d has passed since from (or since the call, if
// from has passed).
func (ld *load) waitSuccessesAfter(t *testing.T, from time.Time, n int, d time.Duration) {
	t.Helper()
	var counts map[int]int
	ok := waitFor(max(time.Until(from), 0)+d, func() bool {
		counts = map[int]int{}
		for _, r := range ld.records() {
			if r.op == "unlock" && r.err == nil && !r.start.Before(from) {
				counts[r.worker]++
			}
		}
		for w := range ld.cfg.workers {
			if counts[w] < n {
				return false
			}
		}
		return true
	})
	if !ok {
		t.Errorf("after %s, workers did not all complete %d cycles within %v: %v (errors since: %v)",
			from.Format("15:04:05.000"), n, d, counts, ld.errorsBetween(from, time.Now()))
	}
}

// errorsBetween counts, by kind, the errors of operations that started in [from, to).
func (ld *load) errorsBetween(from, to time.Time) map[string]int {
	out := map[string]int{}
	for _, r := range ld.records() {
		if r.err != nil && !r.start.Before(from) && r.start.Before(to) {
			out[r.op+": "+errKind(r.err)]++
		}
	}
	return out
}

func total(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

// check asserts what must hold of a load around a fault window [faultAt, windowEnd): no
// overlap that a hold lost to the failover does not explain, no error before the fault, no error in operations started after windowEnd, no
// operation longer than its bound, and each worker's last operation ok. It returns a summary.
func (ld *load) check(t *testing.T, faultAt, windowEnd time.Time) string {
	t.Helper()
	ops := ld.records()
	violations, explained := ld.unexplained()
	assert.Empty(t, violations, "overlapping holders that no lost hold explains")

	before, during, after := map[string]int{}, map[string]int{}, map[string]int{}
	var maxAcq, maxRel time.Duration
	last := map[int]opRecord{}
	okOps := 0
	var firstErr, lastErr time.Time
	for _, r := range ops {
		d := r.end.Sub(r.start)
		if r.op == "acquire" {
			maxAcq = max(maxAcq, d)
		} else {
			maxRel = max(maxRel, d)
		}
		if prev, ok := last[r.worker]; !ok || !r.start.Before(prev.start) {
			last[r.worker] = r
		}
		if r.err == nil {
			okOps++
			continue
		}
		if firstErr.IsZero() || r.end.Before(firstErr) {
			firstErr = r.end
		}
		if r.end.After(lastErr) {
			lastErr = r.end
		}
		k := r.op + ": " + errKind(r.err)
		switch {
		case r.end.Before(faultAt):
			before[k]++
		case r.start.Before(windowEnd):
			during[k]++
		default:
			after[k]++
		}
	}
	assert.Empty(t, before, "errors before the fault")
	assert.Empty(t, after, "errors in operations started after the failover window")
	acqBound := ld.cfg.opTimeout + time.Second
	if ld.cfg.stalls {
		acqBound += rlock.DefaultReleaseTimeout
	}
	assert.LessOrEqual(t, maxAcq, acqBound, "longest acquire")
	assert.LessOrEqual(t, maxRel, rlock.DefaultReleaseTimeout+time.Second, "longest unlock")
	for w := range ld.cfg.workers {
		r, ok := last[w]
		if assert.True(t, ok, "worker %d did nothing", w) {
			assert.NoError(t, r.err, "worker %d's last operation (%s %s)", w, r.op, r.name)
		}
	}
	errSpan := "none"
	if !firstErr.IsZero() {
		errSpan = fmt.Sprintf("from +%v to +%v after the fault",
			firstErr.Sub(faultAt).Round(time.Millisecond), lastErr.Sub(faultAt).Round(time.Millisecond))
	}
	return fmt.Sprintf("%d ops (%d ok), errors in the window: %d %s (%s); longest acquire %v, longest unlock %v; overlaps %d unexplained, %d explained by a hold the failover lost",
		len(ops), okOps, total(during), sortedCounts(during), errSpan,
		maxAcq.Round(time.Millisecond), maxRel.Round(time.Millisecond), len(violations), explained)
}

func sortedCounts(m map[string]int) string {
	keys := slices.Collect(maps.Keys(m))
	sort.Slice(keys, func(i, j int) bool { return m[keys[i]] > m[keys[j]] || m[keys[i]] == m[keys[j]] && keys[i] < keys[j] })
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%q=%d", k, m[k])
	}
	return "{" + strings.Join(parts, ", ") + "}"
}

// errKind names the kind of an operation error: an rlock sentinel, the context's, the
// first word of a Redis error (CLUSTERDOWN, READONLY, MOVED, NOSCRIPT, ...), or the gist of
// a connection error.
func errKind(err error) string {
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return "context deadline exceeded"
	case errors.Is(err, context.Canceled):
		return "context canceled"
	case errors.Is(err, rlock.ErrNotHeld):
		return "rlock.ErrNotHeld"
	case errors.Is(err, rlock.ErrLocked):
		return "rlock.ErrLocked"
	case errors.Is(err, rlock.ErrClosed):
		return "rlock.ErrClosed"
	}
	if re, ok := rueidis.IsRedisErr(err); ok {
		word, _, _ := strings.Cut(re.Error(), " ")
		return "redis " + word
	}
	msg := err.Error()
	for _, s := range []string{"connection refused", "connection reset", "broken pipe", "EOF", "i/o timeout", "closed"} {
		if strings.Contains(msg, s) {
			return s
		}
	}
	if len(msg) > 80 {
		msg = msg[:80]
	}
	return fmt.Sprintf("%T: %s", err, msg)
}
