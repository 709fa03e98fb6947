package bench

// TestGroupLocks: goredisson's RedLock and MultiLock against redsync, the Go Redlock, on the
// same five independent redis-server processes in one run: uncontended acquire+release,
// handoff to 1 and 16 waiters, and the Redis commands each acquisition sends. Contenders
// alternate in rounds so that load drift on the shared machine affects them alike. It prints
// a Markdown section; the figures in docs/BENCHMARKS.md ("Group locks") come from it.

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-redsync/redsync/v4/redis"
	redsyncgoredis "github.com/go-redsync/redsync/v4/redis/goredis/v9"
	"github.com/redis/rueidis"
	"github.com/stretchr/testify/require"

	"github.com/goredisson/goredisson/internal/keys"
	"github.com/goredisson/goredisson/internal/redistest"
	"github.com/goredisson/goredisson/internal/redistest/rlocktest"
	"github.com/goredisson/goredisson/rlock"
)

// Sizes of TestGroupLocks.
const (
	grpServers   = 5
	grpUncRounds = 40 // rounds of the uncontended part, contenders alternating; short, to spread drift
	grpUncOps    = 50
	grpHoRounds  = 4  // blocks per contender and waiter count, alternating
	grpHoPer     = 25 // handoffs per block
	grpCmdOps    = 50 // acquisitions counted with MONITOR
)

// groupProc is one simulated process of a group-lock contender: its own clients of the five
// servers and its own instance of the library.
type groupProc interface {
	lock(ctx context.Context) (release func() error, err error)
	failed() int64 // failed attempts so far (polling contenders; 0 for the others)
}

type groupContender struct {
	name   string
	pubsub bool // waiters subscribe on the first server (readiness by CLIENT LIST)
	// newProc makes a process; pubsub contenders name its connections procName.
	newProc func(t testing.TB, srvs []*redistest.Server, lockName, procName string) groupProc
}

func groupContenders() []*groupContender {
	return []*groupContender{
		{name: "goredisson RedLock", pubsub: true, newProc: newRlockGroupProc(true)},
		{name: "goredisson MultiLock", pubsub: true, newProc: newRlockGroupProc(false)},
		{name: "redsync v4.18.1, default retry delay (50-250 ms)", newProc: newRedsyncGroupProc(0)},
		{name: "redsync v4.18.1, WithRetryDelay(10ms)", newProc: newRedsyncGroupProc(peerRetryDelay)},
	}
}

type rlockGroupProc struct {
	lock1 func(ctx context.Context) error
	unl   func(ctx context.Context) error
}

func newRlockGroupProc(red bool) func(testing.TB, []*redistest.Server, string, string) groupProc {
	return func(t testing.TB, srvs []*redistest.Server, name, procName string) groupProc {
		locks := make([]*rlock.Lock, len(srvs))
		for i, srv := range srvs {
			locks[i] = rlocktest.NewClient(t, namedClient(t, srv, procName), rlock.Options{}).NewLock(name)
		}
		if red {
			r, err := rlock.NewRedLock(locks...)
			require.NoError(t, err)
			return &rlockGroupProc{lock1: func(ctx context.Context) error { _, err := r.Lock(ctx); return err }, unl: r.Unlock}
		}
		m, err := rlock.NewMultiLock(locks...)
		require.NoError(t, err)
		return &rlockGroupProc{lock1: m.Lock, unl: m.Unlock}
	}
}

func (p *rlockGroupProc) lock(ctx context.Context) (func() error, error) {
	octx := rlock.NewOwner(ctx)
	if err := p.lock1(octx); err != nil {
		return nil, err
	}
	o, _ := rlock.OwnerFrom(octx)
	uctx := rlock.WithOwner(context.Background(), o)
	return func() error { return p.unl(uctx) }, nil
}

func (p *rlockGroupProc) failed() int64 { return 0 }

// redsyncGroupProc is redsync over one go-redis client per server, quorum 3 of 5, default
// expiry (8 s) and drift factor; tries unlimited so that the caller's ctx bounds the wait;
// delay 0 keeps redsync's default delay.
type redsyncGroupProc struct {
	p    *redsyncProc
	name string
}

func newRedsyncGroupProc(delay time.Duration) func(testing.TB, []*redistest.Server, string, string) groupProc {
	return func(t testing.TB, srvs []*redistest.Server, name, _ string) groupProc {
		pools := make([]redis.Pool, len(srvs))
		for i, srv := range srvs {
			pools[i] = redsyncgoredis.NewPool(newGoRedis(t, srv))
		}
		return &redsyncGroupProc{p: newRedsyncOver(delay, pools...), name: name}
	}
}

func (g *redsyncGroupProc) lock(ctx context.Context) (func() error, error) {
	return g.p.lock(ctx, g.name)
}

func (g *redsyncGroupProc) failed() int64 { return g.p.failed() }

func TestGroupLocks(t *testing.T) {
	if os.Getenv(EnvBench) != "1" {
		t.Skipf("measurements: set %s=1 to run (see bench/README.md)", EnvBench)
	}
	srvs := make([]*redistest.Server, grpServers)
	ctls := make([]rueidis.Client, grpServers)
	for i := range srvs {
		srvs[i] = redistest.StartProcess(t, redistest.ProcessOptions{})
		ctls[i] = namedClient(t, srvs[i], "grp-ctl")
	}
	contenders := groupContenders()
	var b strings.Builder
	fmt.Fprintf(&b, "Five redis-server %s processes on loopback; %d cores, load %s at the start.\n\n",
		serverInfo(t, ctls[0], "redis_version"), runtime.NumCPU(), loadavg())

	// 1. Uncontended acquire + release, one process per contender, rounds alternating.
	unc := make([]durs, len(contenders))
	procs := make([]groupProc, len(contenders))
	for i, c := range contenders {
		procs[i] = c.newProc(t, srvs, fmt.Sprintf("bench:grp:unc:%d", i), fmt.Sprintf("grp-unc-%d", i))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	floor, floorOp := durs(nil), rawGroupOp(t, srvs)
	for r := range grpUncRounds + 1 {
		for range grpUncOps {
			start := time.Now()
			floorOp(ctx)
			if r > 0 {
				floor = append(floor, time.Since(start))
			}
		}
		for _, i := range rand.Perm(len(contenders)) {
			for range grpUncOps {
				start := time.Now()
				release, err := procs[i].lock(ctx)
				require.NoError(t, err)
				require.NoError(t, release())
				if r > 0 { // round 0 warms up
					unc[i] = append(unc[i], time.Since(start))
				}
			}
		}
	}

	// 2. Commands per acquisition (client-sent commands on all five servers, MONITOR).
	cmds := make([]float64, len(contenders))
	for i := range contenders {
		mons := make([]*monitor, len(srvs))
		for k, srv := range srvs {
			mons[k] = startMonitor(t, srv.Addr)
		}
		for range grpCmdOps {
			release, err := procs[i].lock(ctx)
			require.NoError(t, err)
			require.NoError(t, release())
		}
		time.Sleep(200 * time.Millisecond) // goredisson deletes unlock latches 50 ms after the unlock: count them
		marker := fmt.Sprintf("grp-marker-%d", i)
		total := 0
		for k := range srvs {
			do(ctls[k], ctls[k].B().Echo().Message(marker).Build())
			for _, c := range mons[k].stopAt(t, marker) {
				if c.from != "lua" && c.cmd != "echo" {
					total++
				}
			}
		}
		cmds[i] = float64(total) / grpCmdOps
	}

	// 3. Handoff to 1 and 16 waiters, and its floor (the last contender).
	waiterCounts := []int{1, 16}
	hoContenders := append(slices.Clip(contenders), &groupContender{name: "handoff floor", pubsub: true, newProc: newRawGroupProc})
	raw := len(contenders)
	ho := make(map[int][]durs)
	for _, w := range waiterCounts {
		ho[w] = make([]durs, len(hoContenders))
	}
	for blk := range grpHoRounds {
		for _, w := range waiterCounts {
			for _, i := range rand.Perm(len(hoContenders)) {
				name := fmt.Sprintf("bench:grp:ho:%d:%d:%d", i, w, blk)
				t.Run(fmt.Sprintf("handoff/%d/%d/%d", i, w, blk), func(t *testing.T) { // its processes end with it
					ho[w][i] = append(ho[w][i], groupHandoff(t, srvs, ctls, hoContenders[i], name, w, grpHoPer)...)
				})
			}
		}
	}

	// Report.
	red, def := 0, 2
	fmt.Fprintf(&b, "| contender | uncontended acquire+release p50 | p99 | handoff p50, 1 waiter | p99 | handoff p50, 16 waiters | p99 | commands per acquire+release |\n")
	fmt.Fprintf(&b, "|---|---|---|---|---|---|---|---|\n")
	for i, c := range contenders {
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s | %.1f |\n", c.name, us(unc[i].pct(0.5)), us(unc[i].pct(0.99)),
			ms(ho[1][i].pct(0.5)), ms(ho[1][i].pct(0.99)), ms(ho[16][i].pct(0.5)), ms(ho[16][i].pct(0.99)), cmds[i])
	}
	fmt.Fprintf(&b, "| floor: rlock's acquire script on the five servers at once, then its release script (raw, no client bookkeeping) | %s | %s | | | | | 10 |\n",
		us(floor.pct(0.5)), us(floor.pct(0.99)))
	fmt.Fprintf(&b, "| handoff floor: rlock's scripts raw, each process subscribed for good, acquire on the first server then on the others at once | | | %s | %s | %s | %s | |\n",
		ms(ho[1][raw].pct(0.5)), ms(ho[1][raw].pct(0.99)), ms(ho[16][raw].pct(0.5)), ms(ho[16][raw].pct(0.99)))
	ratio := func(a, b time.Duration) string { return fmt.Sprintf("%.2f", float64(a)/float64(b)) }
	fmt.Fprintf(&b, "\nRatios (same run):\n\n")
	fmt.Fprintf(&b, "- uncontended p50, redsync default / goredisson RedLock: %s (goal ≥ 1: %s); / MultiLock: %s\n",
		ratio(unc[def].pct(0.5), unc[red].pct(0.5)), goal(unc[def].pct(0.5) >= unc[red].pct(0.5)), ratio(unc[def].pct(0.5), unc[1].pct(0.5)))
	for _, w := range waiterCounts {
		fmt.Fprintf(&b, "- handoff p50 with %d waiter(s), redsync default / goredisson RedLock: %s (goal ≥ 10: %s); / MultiLock: %s; redsync 10ms / RedLock: %s\n",
			w, ratio(ho[w][def].pct(0.5), ho[w][red].pct(0.5)), goal(ho[w][def].pct(0.5) >= 10*ho[w][red].pct(0.5)),
			ratio(ho[w][def].pct(0.5), ho[w][1].pct(0.5)), ratio(ho[w][3].pct(0.5), ho[w][red].pct(0.5)))
	}
	fmt.Fprintf(&b, "- handoff p50, 16 waiters / 1 waiter: RedLock %s, MultiLock %s (goal ≤ 1.5), handoff floor %s\n",
		ratio(ho[16][red].pct(0.5), ho[1][red].pct(0.5)), ratio(ho[16][1].pct(0.5), ho[1][1].pct(0.5)), ratio(ho[16][raw].pct(0.5), ho[1][raw].pct(0.5)))
	fmt.Fprintf(&b, "- uncontended p50 / floor: RedLock %s, MultiLock %s (goal ≤ 1.05)\n",
		ratio(unc[red].pct(0.5), floor.pct(0.5)), ratio(unc[1].pct(0.5), floor.pct(0.5)))
	fmt.Fprintf(&b, "\nSamples: %d uncontended ops and %d handoffs per waiter count and contender; load %s at the end.\n",
		len(unc[0]), len(ho[1][0]), loadavg())
	fmt.Print("\n" + b.String())
}

// groupHandoff passes one group lock around waiters+1 processes of contender c, n times, and
// returns the handoff delays: from the holder's release call to the next acquisition. Each
// process first takes the lock once (warmGroup). The holder releases once every other
// process waits (its own connection to the first server subscribed, per CLIENT LIST, or, for
// polling contenders, after a failed attempt since the holder acquired) and a random 1-5 ms
// pause has passed; the releaser waits for the handoff before it tries again, so every
// release has exactly `waiters` waiters. The processes end when t (a subtest per block) ends.
func groupHandoff(t *testing.T, srvs []*redistest.Server, ctls []rueidis.Client, c *groupContender, name string, waiters, n int) durs {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	parts := make([]groupProc, waiters+1)
	names := make([]string, len(parts))
	for i := range parts {
		names[i] = fmt.Sprintf("grp-ho-%d", i)
		parts[i] = c.newProc(t, srvs, name, names[i])
	}
	warmGroup(t, ctx, ctls, parts, name)
	ctl := ctls[0]
	channel := keys.LockChannel(name)
	watch := &subWatch{ctl: ctl, match: func(cc clientConn) bool { return slices.Contains(names, cc.Name) }}
	base := time.Now()
	var (
		releasedAt atomic.Int64
		mu         sync.Mutex
		samples    durs
		inLock     = make([]atomic.Bool, len(parts))
		since      = make([]atomic.Int64, len(parts))
		handed     = make(chan struct{}, 1)
		errs       = make(chan error, len(parts))
	)
	ready := func(holder int) (bool, error) {
		for i := range parts {
			if i != holder && !inLock[i].Load() {
				return false, nil
			}
		}
		if c.pubsub {
			return watch.othersSubscribed(channel, names, holder, waiters)
		}
		for i, p := range parts {
			if i != holder && p.failed() <= since[i].Load() {
				return false, nil
			}
		}
		return true, nil
	}
	// mark notes every process's failed attempts when holder acquired: a polling waiter
	// waits once it failed after that.
	mark := func() {
		for i, p := range parts {
			since[i].Store(p.failed())
		}
	}
	var wg sync.WaitGroup
	run := func(i int, release func() error) error {
		for {
			if release == nil {
				inLock[i].Store(true)
				rel, err := parts[i].lock(ctx)
				inLock[i].Store(false)
				at := time.Since(base)
				if ctx.Err() != nil {
					if err == nil {
						_ = rel()
					}
					return nil
				}
				if err != nil {
					return err
				}
				release = rel
				mark()
				sent := time.Duration(releasedAt.Swap(0))
				mu.Lock()
				samples = append(samples, at-sent)
				k := len(samples)
				mu.Unlock()
				if k >= n {
					cancel()
					return release()
				}
				handed <- struct{}{}
			}
			if _, err := poll(ctx, 200*time.Microsecond, func() (bool, error) { return ready(i) }); err != nil {
				if ctx.Err() != nil {
					_ = release()
					return nil
				}
				return err
			}
			time.Sleep(time.Millisecond + rand.N(4*time.Millisecond))
			releasedAt.Store(int64(time.Since(base)))
			if err := release(); err != nil {
				return err
			}
			release = nil
			select {
			case <-handed:
			case <-ctx.Done():
				return nil
			}
		}
	}
	first, err := parts[0].lock(ctx)
	require.NoError(t, err)
	mark()
	for i := range parts {
		var rel func() error
		if i == 0 {
			rel = first
		}
		wg.Go(func() { errs <- run(i, rel) })
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	return samples
}

// warmGroup has each process take and release the lock once, in turn, and waits until the
// unlock latches of those releases are deleted (goredisson deletes them 50 ms after the
// unlock, on a connection it dials the first time), so that no process makes its first
// acquisition, or its first connections, during the measured handoffs.
func warmGroup(t *testing.T, ctx context.Context, ctls []rueidis.Client, parts []groupProc, name string) {
	t.Helper()
	for _, p := range parts {
		release, err := p.lock(ctx)
		require.NoError(t, err)
		require.NoError(t, release())
	}
	pattern := keys.UnlockLatch(name, "*")
	_, err := poll(ctx, time.Millisecond, func() (bool, error) {
		for _, ctl := range ctls {
			found, err := do(ctl, ctl.B().Scan().Cursor(0).Match(pattern).Count(1000).Build()).AsScanEntry()
			if err != nil || len(found.Elements) > 0 || found.Cursor != 0 {
				return false, err
			}
		}
		return true, nil
	})
	require.NoError(t, err, "unlock latches of the warm-up not deleted")
}

// rawGroupOp returns one floor operation: rlock's acquire script sent to every server at
// once, then its release script (with a fresh unlock latch) to every server at once, each
// through its own rueidis client, with none of rlock's bookkeeping.
func rawGroupOp(t testing.TB, srvs []*redistest.Server) func(ctx context.Context) {
	const name, field = "bench:grp:floor", "00000000-0000-0000-0000-00000000000f:1"
	rcs := make([]rueidis.Client, len(srvs))
	for i, srv := range srvs {
		rcs[i] = srv.Client(t)
	}
	channel := keys.LockChannel(name)
	var n int
	return func(ctx context.Context) {
		n++
		req := fmt.Sprintf("floor-%d", n)
		var wg sync.WaitGroup
		for _, rc := range rcs {
			wg.Go(func() { _, _ = rawAcquire(ctx, rc, name, field) })
		}
		wg.Wait()
		for _, rc := range rcs {
			wg.Go(func() { _ = rawRelease(ctx, rc, name, channel, field, req) })
		}
		wg.Wait()
	}
}
