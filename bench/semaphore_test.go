package bench

// TestSemaphoreBench: goredisson's semaphores (rlock.Semaphore, rlock.ExpirableSemaphore)
// against golang.org/x/sync/semaphore (in-process, the floor of any semaphore) and a
// Redis-backed baseline of our own (an acquire script that checks and DECRBYs, and a plain
// INCRBY release: the least a Redis semaphore can send) and Java Redisson's RSemaphore and
// RPermitExpirableSemaphore (timed inside the JVM of the Java peer, when its jar is built), in
// one run: (a) acquire+release of one permit by one goroutine, the contenders alternating in
// rounds; (b) wake-up latency
// and Redis commands per acquisition with 16 waiters, each on a client of its own (as 16
// processes), woken one at a time by a release of one permit. Skipped unless
// GOREDISSON_BENCH=1; prints its tables (see docs/BENCHMARKS.md, section "Semaphores").

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/require"
	"golang.org/x/sync/semaphore"

	"github.com/goredisson/goredisson/integration/javapeer"
	"github.com/goredisson/goredisson/internal/keys"
	"github.com/goredisson/goredisson/internal/redistest"
	"github.com/goredisson/goredisson/rlock"
)

// semBaselineAcquire is the baseline's acquire: take ARGV[1] permits when there are enough.
var semBaselineAcquire = rueidis.NewLuaScript(`
local v = redis.call('get', KEYS[1])
if v ~= false and tonumber(v) >= tonumber(ARGV[1]) then
	return redis.call('decrby', KEYS[1], ARGV[1])
end
return -1`)

func TestSemaphoreBench(t *testing.T) {
	if os.Getenv(EnvBench) != "1" {
		t.Skipf("measurements: set %s=1 to run (see bench/README.md)", EnvBench)
	}
	rounds, ops, wakes := 20, 200, 200
	if os.Getenv(EnvBenchQuick) == "1" {
		rounds, ops, wakes = 4, 50, 40
	}
	srv := redistest.Start(t)
	ctl := namedClient(t, srv, "sem-ctl")
	var out strings.Builder
	fmt.Fprintf(&out, "Redis %s (%s), %s, load at start %s\n\n", serverInfo(t, ctl, "redis_version"), srv.Mode(), cpuModel(), loadavg())
	semUncontended(t, srv, rounds, ops, &out)
	semWakeups(t, srv, ctl, wakes, &out)
	fmt.Fprintf(&out, "\nload at end %s\n", loadavg())
	fmt.Print("\n" + out.String())
}

// semUncontended is part (a).
func semUncontended(t *testing.T, srv *redistest.Server, rounds, ops int, out *strings.Builder) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	rc := namedClient(t, srv, "sem-unc")
	c, err := rlock.New(ctx, rc, rlock.Options{})
	require.NoError(t, err)
	t.Cleanup(c.Close)
	name := fmt.Sprintf("bench:sem:%d", time.Now().UnixNano())
	s, x := c.NewSemaphore(name+":sem"), c.NewExpirableSemaphore(name+":xsem")
	for _, set := range []func(context.Context, int64) (bool, error){s.TrySetPermits, x.TrySetPermits} {
		_, err := set(ctx, 1<<20)
		require.NoError(t, err)
	}
	base := name + ":base"
	require.NoError(t, do(rc, rc.B().Set().Key(base).Value(strconv.Itoa(1<<20)).Build()).Error())
	local := semaphore.NewWeighted(1 << 20)

	// op returns the time to record, or 0 to record the wall time of the call.
	type contender struct {
		name string
		op   func() (time.Duration, error)
		d    durs
	}
	wall := func(f func() error) func() (time.Duration, error) {
		return func() (time.Duration, error) { return 0, f() }
	}
	cs := []*contender{
		{name: "golang.org/x/sync/semaphore (in-process)", op: wall(func() error {
			if err := local.Acquire(ctx, 1); err != nil {
				return err
			}
			local.Release(1)
			return nil
		})},
		{name: "baseline: acquire script + INCRBY", op: wall(func() error {
			if err := semBaselineAcquire.Exec(ctx, rc, []string{base}, []string{"1"}).Error(); err != nil {
				return err
			}
			return rc.Do(ctx, rc.B().Incrby().Key(base).Increment(1).Build()).Error()
		})},
		{name: "rlock.Semaphore Acquire(1) + Release(1)", op: wall(func() error {
			if err := s.Acquire(ctx, 1); err != nil {
				return err
			}
			return s.Release(ctx, 1)
		})},
		{name: "rlock.ExpirableSemaphore Acquire(1, 1m) + Release(id)", op: wall(func() error {
			ids, err := x.Acquire(ctx, 1, time.Minute)
			if err != nil {
				return err
			}
			return x.Release(ctx, ids...)
		})},
	}
	if jar, why := javaJar(t); jar == "" {
		fmt.Fprintf(out, "%s\n\n", why)
	} else {
		p := javapeer.Start(t, jar, "redis://"+srv.Addr, javapeer.WithJVMArgs("-Xmx128m"))
		for _, kind := range []string{"sem", "xsem"} {
			if r, err := p.Do(ctx, "o", kind+".setpermits", name+":java"+kind, strconv.Itoa(1<<20)); err != nil || !r.OK {
				t.Fatalf("%s.setpermits: %v %v", kind, r, err)
			}
		}
		// javaOp runs acquire then release in the JVM and returns the time both took there
		// (the peer's ELAPSED), without the pipe trips between Go and the JVM.
		javaOp := func(kind string, acquire []string, release func(acquired string) []string) func() (time.Duration, error) {
			return func() (time.Duration, error) {
				a, err := p.Do(ctx, "o", kind+".acquire", acquire...)
				if err == nil && !a.OK {
					err = fmt.Errorf("%s.acquire: %s", kind, a.Err)
				}
				if err != nil {
					return 0, err
				}
				r, err := p.Do(ctx, "o", kind+".release", release(a.Value)...)
				if err == nil && !r.OK {
					err = fmt.Errorf("%s.release: %s", kind, r.Err)
				}
				return a.Elapsed + r.Elapsed, err
			}
		}
		cs = append(cs,
			&contender{name: "Java Redisson " + javaVersion + ".x RSemaphore acquire(1) + release(1), inside the JVM",
				op: javaOp("sem", []string{name + ":javasem", "1"}, func(string) []string { return []string{name + ":javasem", "1"} })},
			&contender{name: "Java Redisson " + javaVersion + ".x RPermitExpirableSemaphore acquire(1, 1m) + release(id), inside the JVM",
				op: javaOp("xsem", []string{name + ":javaxsem", "1", "60000"}, func(id string) []string { return []string{name + ":javaxsem", id} })},
		)
	}
	for r := -1; r < rounds; r++ { // round -1 warms up
		for _, ct := range rotated(cs, r+1) {
			for range ops {
				start := time.Now()
				d, err := ct.op()
				if d == 0 {
					d = time.Since(start)
				}
				require.NoError(t, err, ct.name)
				if r >= 0 {
					ct.d = append(ct.d, d)
				}
			}
		}
	}
	baseP50 := cs[1].d.pct(0.5)
	fmt.Fprintf(out, "(a) acquire + release of one permit, one goroutine: %d rounds × %d ops each, alternating\n\n", rounds, ops)
	fmt.Fprintf(out, "| contender | p50 | p90 | p99 | p50 / baseline |\n|---|---|---|---|---|\n")
	for _, ct := range cs {
		fmt.Fprintf(out, "| %s | %s | %s | %s | %.3g |\n", ct.name, us(ct.d.pct(0.5)), us(ct.d.pct(0.9)), us(ct.d.pct(0.99)),
			float64(ct.d.pct(0.5))/float64(baseP50))
	}
}

// semWaiter is one of the waiters of part (b): its own rueidis client and rlock.Client.
type semWaiter struct {
	acquire func(ctx context.Context) error
	inside  atomic.Bool // in an acquire call
}

// semWakeups is part (b), for each semaphore type.
func semWakeups(t *testing.T, srv *redistest.Server, ctl rueidis.Client, wakes int, out *strings.Builder) {
	const waiters = 16
	fmt.Fprintf(out, "\n(b) %d waiters, each on a client of its own; a release of one permit wakes one: %d wake-ups per type\n\n", waiters, wakes)
	fmt.Fprintf(out, "| semaphore | wake-up p50 | p90 | max | commands per acquisition | of which scripts | breakdown |\n|---|---|---|---|---|---|---|\n")
	for _, kind := range []string{"rlock.Semaphore", "rlock.ExpirableSemaphore", "golang.org/x/sync/semaphore (in-process)"} {
		d, cmds := semWakeupsOf(t, srv, ctl, kind, waiters, wakes)
		per, scripts, breakdown := "–", "–", "–"
		if cmds.acqs > 0 {
			per, scripts, breakdown = fmt.Sprintf("%.2f", cmds.per()), fmt.Sprintf("%.2f", cmds.scripts()), cmds.breakdown()
		}
		fmt.Fprintf(out, "| %s | %s | %s | %s | %s | %s | %s |\n", kind, us(d.pct(0.5)), us(d.pct(0.9)), us(d.max()), per, scripts, breakdown)
	}
}

// semWakeupsOf measures wakes hand-offs of one semaphore type: every round, once all the
// waiters are asleep (inside their acquire call and, for Redis, subscribed), the releaser
// notes the time and releases one permit; the waiter whose acquire returns notes the
// delay and calls acquire again. Commands are counted from INFO commandstats over the
// measured rounds, less the control client's own polls; they include the releaser's
// release, one per acquisition.
func semWakeupsOf(t *testing.T, srv *redistest.Server, ctl rueidis.Client, kind string, waiters, wakes int) (durs, cmdCount) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	name := fmt.Sprintf("bench:semwake:%d", time.Now().UnixNano())
	newClient := func(label string) *rlock.Client {
		c, err := rlock.New(ctx, namedClient(t, srv, label), rlock.Options{})
		require.NoError(t, err)
		t.Cleanup(c.Close)
		return c
	}
	var release func() error
	ws := make([]*semWaiter, waiters)
	switch kind {
	case "rlock.Semaphore":
		r := newClient("sem-rel").NewSemaphore(name)
		_, err := r.TrySetPermits(ctx, 0)
		require.NoError(t, err)
		release = func() error { return r.Release(ctx, 1) }
		for i := range ws {
			s := newClient(fmt.Sprintf("sem-w%d", i)).NewSemaphore(name)
			ws[i] = &semWaiter{acquire: func(ctx context.Context) error { return s.Acquire(ctx, 1) }}
		}
	case "rlock.ExpirableSemaphore":
		r := newClient("sem-rel").NewExpirableSemaphore(name)
		_, err := r.TrySetPermits(ctx, 0)
		require.NoError(t, err)
		release = func() error { return r.AddPermits(ctx, 1) } // the permits taken are never given back
		for i := range ws {
			s := newClient(fmt.Sprintf("sem-w%d", i)).NewExpirableSemaphore(name)
			ws[i] = &semWaiter{acquire: func(ctx context.Context) error { _, err := s.Acquire(ctx, 1, 0); return err }}
		}
	default:
		local := semaphore.NewWeighted(1)
		require.NoError(t, local.Acquire(ctx, 1))
		release = func() error { local.Release(1); return nil }
		for i := range ws {
			ws[i] = &semWaiter{acquire: func(ctx context.Context) error { return local.Acquire(ctx, 1) }}
		}
	}
	redisBacked := !strings.HasPrefix(kind, "golang.org")
	channel := keys.SemaphoreChannel(name)

	var released atomic.Int64 // UnixNano of the last release
	woke := make(chan time.Duration)
	wctx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	for _, w := range ws {
		wg.Go(func() {
			for {
				w.inside.Store(true)
				err := w.acquire(wctx)
				w.inside.Store(false)
				if err != nil {
					return
				}
				select {
				case woke <- time.Since(time.Unix(0, released.Load())):
				case <-wctx.Done():
					return
				}
			}
		})
	}
	defer func() { stop(); wg.Wait() }()

	polls := map[string]int64{} // the control client's own commands during the measured rounds
	ready := func() bool {
		for _, w := range ws {
			if !w.inside.Load() {
				return false
			}
		}
		if !redisBacked {
			return true
		}
		polls["pubsub|numsub"]++
		polls["pubsub|shardnumsub"]++
		n, s := redistest.NumSub(t, ctl, channel), redistest.ShardNumSub(t, ctl, channel)
		return max(n, s) >= int64(waiters)
	}
	const warm = 5
	var d durs
	var cmds cmdCount
	var before map[string]int64
	for i := range warm + wakes {
		if i == warm {
			clear(polls)
			before = commandStats(t, ctl)
		}
		require.True(t, redistest.Poll(hoReadyMax, 50*time.Microsecond, ready), "%s: the waiters are not all asleep", kind)
		released.Store(time.Now().UnixNano())
		require.NoError(t, release())
		took := <-woke
		if i >= warm {
			d = append(d, took)
		}
	}
	if redisBacked {
		after := commandStats(t, ctl)
		cmds.add(before, after, polls, int64(wakes))
	}
	return d, cmds
}
