package bench

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"text/tabwriter"
	"time"

	"github.com/google/uuid"
	"github.com/redis/rueidis"
	"github.com/stretchr/testify/require"

	"github.com/goredisson/goredisson/internal/keys"
	"github.com/goredisson/goredisson/internal/redistest"
	"github.com/goredisson/goredisson/internal/redistest/rlocktest"
	"github.com/goredisson/goredisson/lua"
	"github.com/goredisson/goredisson/renewal"
	"github.com/goredisson/goredisson/rlock"
)

// EnvBench enables TestReport.
const EnvBench = "GOREDISSON_BENCH"

// Sizes of the measurements.
const (
	pingSamples    = 2000
	pingWarmup     = 200
	handoffRounds  = 1000 // measured handoffs per configuration (the brief asks >= 200)
	handoffWarmup  = 20   // handoffs discarded first
	commandsHold   = time.Second
	renewLocks     = 100_000
	renewLease     = 3 * time.Second // interval 1 s
	renewBatch     = 100
	renewIntervals = 5 // intervals in the measured window
	idleWindow     = 5 * time.Second
)

// TestReport measures everything on one local redis-server (the waiter-command count uses
// a second, dedicated one, so that INFO commandstats holds nothing else) and prints a
// report. It asserts no timings: goals are reported as met or NOT MET.
func TestReport(t *testing.T) {
	if os.Getenv(EnvBench) != "1" {
		t.Skipf("measurements: set %s=1 to run (see bench/README.md)", EnvBench)
	}
	srv := redistest.Start(t)
	info := namedClient(t, srv, "bench-info")
	var out strings.Builder
	fmt.Fprintf(&out, "\n=== goredisson bench report ===\n")
	fmt.Fprintf(&out, "redis-server %s (%s mode) on %s; %s %s/%s, GOMAXPROCS=%d, NumCPU=%d\n",
		serverInfo(t, info, "redis_version"), srv.Mode(), srv.Addr, runtime.Version(), runtime.GOOS, runtime.GOARCH,
		runtime.GOMAXPROCS(0), runtime.NumCPU())
	fmt.Fprintf(&out, "load average at start: %s\n", loadavg())
	defer func() {
		fmt.Fprintf(&out, "\nload average at end: %s\n", loadavg())
		fmt.Print(out.String())
	}()

	var pingP50, idlePingP50, floorP50 time.Duration
	t.Run("ping", func(t *testing.T) {
		rc := namedClient(t, srv, "bench-ping")
		hot, idle := measurePing(t, rc, false), measurePing(t, rc, true)
		floor := handoffFloor(t, rc, namedClient(t, srv, "bench-floor"), "bench:floor", pingWarmup, pingSamples)
		pingP50, idlePingP50, floorP50 = hot.pct(.5), idle.pct(.5), floor.pct(.5)
		fmt.Fprintf(&out, "\n1. PING round trip (rueidis Do, %d samples after %d warm-up)\n", len(hot), pingWarmup)
		tw := tabwriter.NewWriter(&out, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintf(tw, "   \tp50\tp90\tp99\tmean\tmin\tmax\t\n")
		for _, x := range []struct {
			name string
			d    durs
		}{{"back to back", hot}, {"after a random 1-5 ms pause (context only)", idle},
			{"handoff floor (context only, see below)", floor}} {
			d := x.d
			fmt.Fprintf(tw, "   %s\t%s\t%s\t%s\t%s\t%s\t%s\t\n", x.name, us(d.pct(.5)), us(d.pct(.9)), us(d.pct(.99)),
				us(d.mean()), us(d.min()), us(d.max()))
		}
		_ = tw.Flush()
		fmt.Fprintf(&out, "   handoff floor: after the same pause, client A runs rlock's raw release script (lua.Release,\n")
		fmt.Fprintf(&out, "   publishing to nobody) and then client B its raw acquire script (lua.Acquire): the two\n")
		fmt.Fprintf(&out, "   sequential script round trips of any Redisson-protocol handoff, without pub/sub or library.\n")
	})

	t.Run("handoff", func(t *testing.T) {
		fmt.Fprintf(&out, "\n2. Handoff: just before the holder's Unlock -> the next acquirer's Lock returns\n")
		fmt.Fprintf(&out, "   %d measured rounds per row (after %d warm-up); every participant has its own rueidis client\n", handoffRounds, handoffWarmup)
		fmt.Fprintf(&out, "   and rlock.Client; release at a random 1-5 ms after CLIENT LIST shows every other\n")
		fmt.Fprintf(&out, "   participant subscribed (sub>=1) and PUBSUB NUMSUB >= waiters. owner ctx: \"cancel\" = has a\n")
		fmt.Fprintf(&out, "   Done channel (acquire script under a detached, bounded context), \"bg\" = context.Background.\n")
		tw := tabwriter.NewWriter(&out, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintf(tw, "   waiters\tctx\tp50\tp90\tp99\tmax\tmean\tUnlock call p50\tp50/PING p50\tp50/idle-PING p50\tp50/floor p50\tgoal <= 3\tscripts/round\t\n")
		for _, waiters := range []int{1, 16} {
			for _, cancelable := range []bool{true, false} {
				var r handoffResult
				ctxName := map[bool]string{true: "cancel", false: "bg"}[cancelable]
				t.Run(fmt.Sprintf("waiters=%d/ctx=%s", waiters, ctxName), func(t *testing.T) {
					r = measureHandoff(t, srv, waiters, cancelable)
				})
				d := r.samples
				ratio := float64(d.pct(.5)) / float64(pingP50)
				fmt.Fprintf(tw, "   %d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%.2f\t%.2f\t%.2f\t%s\t%.1f\t\n", waiters, ctxName, us(d.pct(.5)),
					us(d.pct(.9)), us(d.pct(.99)), us(d.max()), us(d.mean()), us(r.unlocks.pct(.5)), ratio,
					float64(d.pct(.5))/float64(idlePingP50), float64(d.pct(.5))/float64(floorP50), goal(ratio <= 3),
					r.scriptsPerRound)
			}
		}
		_ = tw.Flush()
		fmt.Fprintf(&out, "   scripts/round: EVALSHA+EVAL of all participants per handoff (INFO commandstats): the\n")
		fmt.Fprintf(&out, "   release, the acquires of every woken waiter, and the releaser's two tries as it waits again.\n")
	})

	t.Run("waiter-commands", func(t *testing.T) {
		r := measureWaiterCommands(t)
		writeWaiterCommands(&out, r)
	})

	t.Run("renewal", func(t *testing.T) {
		var wheel, naive, naiveSmall renewResult
		t.Run("wheel", func(t *testing.T) { wheel = measureWheel(t, srv) })
		t.Run("naive", func(t *testing.T) { naive = measureNaive(t, srv, renewLocks) })
		t.Run("naive-small", func(t *testing.T) { naiveSmall = measureNaive(t, srv, renewLocks/10) })
		writeRenewal(&out, wheel, naive, naiveSmall)
	})
}

// loadavg returns /proc/loadavg's first three fields: other work on the machine skews
// every number here.
func loadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}

// --- 1. PING -------------------------------------------------------------------------------

// measurePing returns pingSamples PING round trips, each after a random pause of 1-5 ms
// when pause is set (as the handoff's holder pauses before Unlock).
func measurePing(t *testing.T, rc rueidis.Client, pause bool) durs {
	ctx := context.Background()
	for range pingWarmup {
		require.NoError(t, rc.Do(ctx, rc.B().Ping().Build()).Error())
	}
	d := make(durs, 0, pingSamples)
	for range pingSamples {
		if pause {
			time.Sleep(time.Millisecond + rand.N(4*time.Millisecond))
		}
		cmd := rc.B().Ping().Build()
		start := time.Now()
		err := rc.Do(ctx, cmd).Error()
		d = append(d, time.Since(start))
		require.NoError(t, err)
	}
	return d
}

// handoffFloor returns n handoff floors on lock name, after warmup unmeasured ones: after a
// random 1-5 ms pause, a release by a (rlock's release script, the lock's last hold)
// followed by an acquire by b (rlock's acquire script), both raw through rueidis on the
// caller's goroutine.
func handoffFloor(t *testing.T, a, b rueidis.Client, name string, warmup, n int) durs {
	ctx := context.Background()
	channel := keys.LockChannel(name)
	fa, fb := "00000000-0000-0000-0000-00000000000a:1", "00000000-0000-0000-0000-00000000000b:1"
	acquire := func(c rueidis.Client, field string) {
		err := lua.Acquire.Exec(ctx, c, []string{name}, []string{"30000", field}).Error()
		require.True(t, rueidis.IsRedisNil(err), "acquire: %v", err)
	}
	release := func(c rueidis.Client, field string) {
		latch := keys.UnlockLatch(name, field+"-"+strconv.FormatInt(rand.Int64(), 36))
		n, err := lua.Release.Exec(ctx, c, []string{name, channel, latch},
			[]string{"0", "30000", field, "PUBLISH", "1000"}).AsInt64()
		require.NoError(t, err)
		require.Equal(t, int64(1), n)
	}
	d := make(durs, 0, n)
	for i := range warmup + n {
		acquire(a, fa)
		time.Sleep(time.Millisecond + rand.N(4*time.Millisecond))
		start := time.Now()
		release(a, fa)
		acquire(b, fb)
		took := time.Since(start)
		release(b, fb)
		if i >= warmup {
			d = append(d, took)
		}
	}
	return d
}

// --- 2. handoff ----------------------------------------------------------------------------

type handoffResult struct {
	samples durs // Unlock start → next Lock return
	unlocks durs // Unlock call durations
	polls   int  // readiness polls in all

	scriptsPerRound float64 // EVALSHA+EVAL calls (all clients) per handoff
}

// measureHandoff passes one lock around waiters+1 participants, each a separate rueidis
// client and rlock.Client (a separate process, as far as Redis and the library can tell).
// The holder waits until every other participant is observed waiting (subscribed), sleeps a
// random 1-5 ms, notes the time and unlocks; the participant whose Lock returns next records
// the delay. The releaser calls Lock again only after the handoff, so every release has
// exactly `waiters` waiters and the releaser never barges in.
//
// With cancelable, the owners' contexts have a Done channel (as a request's context does);
// otherwise they derive from context.Background, which lets rlock run the acquire script on
// the caller's goroutine, and the run is ended by closing the clients.
func measureHandoff(t *testing.T, srv *redistest.Server, waiters int, cancelable bool) handoffResult {
	type part struct {
		name   string
		c      *rlock.Client
		l      *rlock.Lock
		ctx    context.Context
		inLock atomic.Bool
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	ownerBase := context.Background()
	if cancelable {
		ownerBase = ctx
	}
	tag := fmt.Sprintf("%d-%v", waiters, cancelable)
	lockName := "bench:handoff:" + tag
	channel := keys.LockChannel(lockName)
	ctl := namedClient(t, srv, "bench-h"+tag+"-ctl")
	prefix := "bench-h" + tag + "-p"
	parts := make([]*part, waiters+1)
	for i := range parts {
		name := fmt.Sprintf("%s%d", prefix, i)
		c := rlocktest.NewClient(t, namedClient(t, srv, name), rlock.Options{})
		parts[i] = &part{name: name, c: c, l: c.NewLock(lockName), ctx: rlock.NewOwner(ownerBase)}
	}

	// ready reports whether every participant but holder is inside Lock and subscribed.
	ready := func(holder *part) func() (bool, error) {
		return func() (bool, error) {
			for _, p := range parts {
				if p != holder && !p.inLock.Load() {
					return false, nil
				}
			}
			n, err := numsub(ctl, channel)
			if err != nil || n < int64(waiters) {
				return false, err
			}
			conns, err := clientList(ctl)
			if err != nil {
				return false, err
			}
			subscribed := map[string]bool{}
			for _, c := range conns {
				if c.Sub > 0 && c.Name != holder.name && strings.HasPrefix(c.Name, prefix) {
					subscribed[c.Name] = true
				}
			}
			return len(subscribed) >= waiters, nil
		}
	}

	base := time.Now()
	var (
		releasedAt atomic.Int64 // since base; 0 while no release is pending
		handed     = make(chan struct{}, 1)
		mu         sync.Mutex
		res        handoffResult
	)
	target := handoffRounds + handoffWarmup
	run := func(p *part, holding bool) error {
		for {
			if !holding {
				p.inLock.Store(true)
				err := p.l.Lock(p.ctx)
				p.inLock.Store(false)
				at := time.Since(base)
				if ctx.Err() != nil { // the run has ended: give back what we may have got
					if err == nil {
						_ = p.l.Unlock(p.ctx)
					}
					return nil
				}
				if err != nil {
					return fmt.Errorf("%s: Lock: %w", p.name, err)
				}
				rel := time.Duration(releasedAt.Swap(0))
				if rel == 0 {
					return fmt.Errorf("%s acquired with no release pending", p.name)
				}
				mu.Lock()
				res.samples = append(res.samples, at-rel)
				k := len(res.samples)
				mu.Unlock()
				if k >= target {
					cancel()
					return p.l.Unlock(p.ctx)
				}
				handed <- struct{}{}
			}
			holding = false
			n, err := poll(ctx, 100*time.Microsecond, ready(p))
			if err != nil {
				if ctx.Err() != nil {
					return nil
				}
				return fmt.Errorf("%s: waiting for waiters: %w", p.name, err)
			}
			time.Sleep(time.Millisecond + rand.N(4*time.Millisecond))
			start := time.Since(base)
			releasedAt.Store(int64(start))
			if err := p.l.Unlock(p.ctx); err != nil {
				return fmt.Errorf("%s: Unlock: %w", p.name, err)
			}
			took := time.Since(base) - start
			mu.Lock()
			res.unlocks = append(res.unlocks, took)
			res.polls += n
			mu.Unlock()
			select {
			case <-handed:
			case <-ctx.Done():
				return nil
			}
		}
	}

	scripts := func() int64 { st := commandStats(t, ctl); return st["evalsha"] + st["eval"] }
	scripts0 := scripts()
	require.NoError(t, parts[0].l.Lock(parts[0].ctx))
	errs := make(chan error, len(parts))
	var wg sync.WaitGroup
	for i, p := range parts {
		wg.Go(func() { errs <- run(p, i == 0) })
	}
	<-ctx.Done()
	for _, p := range parts { // wakes every Lock still waiting with ErrClosed
		p.c.Close()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	require.Len(t, res.samples, target, "run ended early (timeout?)")
	res.scriptsPerRound = float64(scripts()-scripts0) / float64(target)
	res.samples = res.samples[handoffWarmup:]
	res.unlocks = res.unlocks[handoffWarmup:]
	t.Logf("waiters=%d cancelable=%v: %d handoffs, %.1f readiness polls per round", waiters, cancelable,
		len(res.samples), float64(res.polls)/float64(target))
	return res
}

// --- 3. commands per acquisition ------------------------------------------------------------

type phase struct {
	title   string
	stats   map[string]int64            // INFO commandstats after CONFIG RESETSTAT
	ctl     map[string]int64            // commands the control client sent in the window
	clients map[string]map[string]int64 // MONITOR: client name → command → count
	held    time.Duration               // how long the holder held the lock
}

type commandsResult struct {
	holderAlone, contended, shortWatchdog phase
}

const (
	cmdHolder      = "bench-holder"
	cmdHolderShort = "bench-holder-short"
	cmdWaiter      = "bench-waiter"
	cmdCtl         = "bench-ctl"
)

// measureWaiterCommands counts, on a dedicated server, what one waiter sends to acquire a
// lock that another client holds for 1 s. Phase A: the holder alone (lock, hold 1 s,
// unlock). Phase B: the same with one waiter. Phase C: B with a holder whose watchdog
// timeout is 300 ms (renewed every 100 ms), to show what the waiter does when the TTL it
// sleeps on runs out before the release. Each phase is bracketed by CONFIG RESETSTAT and
// INFO commandstats, and watched through MONITOR to attribute every command to its client.
func measureWaiterCommands(t *testing.T) commandsResult {
	srv := redistest.Start(t)
	ctl := namedClient(t, srv, cmdCtl)
	holder := rlocktest.NewClient(t, namedClient(t, srv, cmdHolder), rlock.Options{})
	holderShort := rlocktest.NewClient(t, namedClient(t, srv, cmdHolderShort), rlock.Options{WatchdogTimeout: 300 * time.Millisecond})
	waiter := rlocktest.NewClient(t, namedClient(t, srv, cmdWaiter), rlock.Options{})
	const name = "bench:commands"
	channel := keys.LockChannel(name)
	hl, hsl, wl := holder.NewLock(name), holderShort.NewLock(name), waiter.NewLock(name)
	hctx, wctx := rlock.NewOwner(context.Background()), rlock.NewOwner(context.Background())
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	// scenario runs one phase's work and returns the control client's commands.
	scenario := func(h *rlock.Lock, hold time.Duration, withWaiter bool) (map[string]int64, time.Duration) {
		polls := map[string]int64{}
		require.NoError(t, h.Lock(hctx))
		lockedAt := time.Now()
		done := make(chan error, 1)
		if withWaiter {
			go func() { done <- wl.Lock(wctx) }()
			n, err := poll(ctx, time.Millisecond, func() (bool, error) {
				n, err := numsub(ctl, channel)
				return n >= 1, err
			})
			require.NoError(t, err)
			polls["pubsub|numsub"] += int64(n)
		}
		time.Sleep(time.Until(lockedAt.Add(hold)))
		require.NoError(t, h.Unlock(hctx))
		held := time.Since(lockedAt)
		wantKeys := int64(0)
		if withWaiter {
			require.NoError(t, <-done)
			wantKeys = 1 // the waiter's lock
			// The waiter's UNSUBSCRIBE is sent after Lock returns: wait for it.
			n, err := poll(ctx, time.Millisecond, func() (bool, error) {
				n, err := numsub(ctl, channel)
				return n == 0, err
			})
			require.NoError(t, err)
			polls["pubsub|numsub"] += int64(n)
		}
		// The holder's unlock latch is deleted in the background: wait for it.
		n, err := poll(ctx, time.Millisecond, func() (bool, error) {
			n, err := do(ctl, ctl.B().Dbsize().Build()).AsInt64()
			return n == wantKeys, err
		})
		require.NoError(t, err)
		polls["dbsize"] += int64(n)
		return polls, held
	}
	// settle releases the waiter's hold and waits until the server is quiet again.
	settle := func() {
		require.NoError(t, wl.Unlock(wctx))
		_, err := poll(ctx, time.Millisecond, func() (bool, error) {
			n, err := do(ctl, ctl.B().Dbsize().Build()).AsInt64()
			return n == 0, err
		})
		require.NoError(t, err)
	}
	measure := func(title string, h *rlock.Lock, withWaiter bool) phase {
		mon := startMonitor(t, srv.Addr)
		require.NoError(t, do(ctl, ctl.B().ConfigResetstat().Build()).Error())
		polls, held := scenario(h, commandsHold, withWaiter)
		polls["config|resetstat"]++
		p := phase{title: title, stats: commandStats(t, ctl), ctl: polls, held: held}
		conns, err := clientList(ctl)
		require.NoError(t, err)
		marker := "bench-marker-" + uuid.NewString()
		require.NoError(t, do(ctl, ctl.B().Echo().Message(marker).Build()).Error())
		p.clients = byClient(mon.stopAt(t, marker), conns)
		if withWaiter {
			settle()
		}
		return p
	}

	// Warm up: load the scripts and open every connection the phases will use, on the same
	// lock name (rueidis spreads keyed commands over its connections at random).
	for range 3 {
		for _, h := range []*rlock.Lock{hl, hsl} {
			scenario(h, 50*time.Millisecond, true)
			settle()
		}
	}
	return commandsResult{
		holderAlone:   measure("A: holder alone (Lock, hold 1 s, Unlock)", hl, false),
		contended:     measure("B: holder holds 1 s, one waiter calls Lock", hl, true),
		shortWatchdog: measure("C: as B, holder's WatchdogTimeout 300 ms", hsl, true),
	}
}

func writeWaiterCommands(out *strings.Builder, r commandsResult) {
	fmt.Fprintf(out, "\n3. Commands per acquisition while the holder keeps the lock for %v (dedicated server)\n", commandsHold)
	fmt.Fprintf(out, "   Attribution by MONITOR (connection -> CLIENT SETNAME of its rueidis client); \"in scripts\"\n")
	fmt.Fprintf(out, "   are the redis.call()s of all scripts. INFO commandstats column: phase total after\n")
	fmt.Fprintf(out, "   CONFIG RESETSTAT; \"waiter by stats\" = B - A - (control polls B - A).\n")
	for _, p := range []phase{r.holderAlone, r.contended, r.shortWatchdog} {
		fmt.Fprintf(out, "\n   %s (held %v)\n", p.title, p.held.Round(time.Millisecond))
		holderName := cmdHolder
		if p.title == r.shortWatchdog.title {
			holderName = cmdHolderShort
		}
		names := map[string]bool{}
		for c := range p.stats {
			names[c] = true
		}
		for _, m := range p.clients {
			for c := range m {
				names[c] = true
			}
		}
		sorted := make([]string, 0, len(names))
		for c := range names {
			sorted = append(sorted, c)
		}
		slices.Sort(sorted)
		tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintf(tw, "   command\tcommandstats\tcontrol polls\twaiter\tholder\tcontrol\tin scripts\tother\t")
		if p.title == r.contended.title {
			fmt.Fprintf(tw, "waiter by stats\t")
		}
		fmt.Fprintf(tw, "\n")
		var waiterTotal, waiterPing, holderTotal int64
		for _, c := range sorted {
			var other int64
			for who, m := range p.clients {
				if who != cmdWaiter && who != holderName && who != cmdCtl && who != "lua" {
					other += m[c]
				}
			}
			w := p.clients[cmdWaiter][c]
			waiterTotal += w
			if c == "ping" {
				waiterPing += w
			}
			holderTotal += p.clients[holderName][c]
			fmt.Fprintf(tw, "   %s\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t", c, p.stats[c], p.ctl[c], w,
				p.clients[holderName][c], p.clients[cmdCtl][c], p.clients["lua"][c], other)
			if p.title == r.contended.title {
				a := r.holderAlone
				fmt.Fprintf(tw, "%d\t", p.stats[c]-a.stats[c]-(p.ctl[c]-a.ctl[c]))
			}
			fmt.Fprintf(tw, "\n")
		}
		_ = tw.Flush()
		fmt.Fprintf(out, "   => waiter sent %d commands (%d lock protocol + %d rueidis keepalive PING); holder sent %d\n",
			waiterTotal, waiterTotal-waiterPing, waiterPing, holderTotal)
	}
	b := r.contended.clients[cmdWaiter]
	proto := int64(0)
	for c, n := range b {
		if c != "ping" {
			proto += n
		}
	}
	fmt.Fprintf(out, "   Goal (bounded, no per-interval retries) for B: %d lock-protocol commands (evalsha %d, subscribe %d,\n",
		proto, b["evalsha"]+b["eval"], b["subscribe"])
	fmt.Fprintf(out, "   unsubscribe %d) <= 5 (try, subscribe, try, try after the release message, unsubscribe): %s\n",
		b["unsubscribe"], goal(proto <= 5))
}

// --- 4. renewal at scale ---------------------------------------------------------------------

type renewResult struct {
	kind         string
	locks        int
	interval     time.Duration
	addWall      time.Duration
	heapAdded    float64 // bytes per lock right after registering them (before any pass)
	heapSteady   float64 // bytes per lock after the measured window
	idleCPU      time.Duration
	idleMeasured bool
	window       time.Duration
	cpu          time.Duration // process CPU in the window
	redisCPU     time.Duration // redis-server CPU in the window
	calls        uint64        // script calls in the window
	renewed      uint64
	failed       uint64
	passes       durs // wall time of each renewal pass (burst) in the window
	passCmds     []int
	goroutines   int // peak in the window
	bad          int // locks without a positive TTL at the check
	minTTL       time.Duration
	checkedAt    time.Duration // since registration
	remaining    int           // locks the renewer still renews at the end
	lostNotHeld  int           // reported lost: field gone at renewal
	lostExpired  int           // reported lost: no renewal succeeded for a lease (wheel only)
}

func (r renewResult) perInterval(n uint64) float64 {
	return float64(n) / (float64(r.window) / float64(r.interval))
}

// perCycle scales n to one renewal of every lock (renewed/locks cycles in the window).
func (r renewResult) perCycle(n uint64) float64 {
	if r.renewed == 0 {
		return 0
	}
	return float64(n) * float64(r.locks) / float64(r.renewed)
}

// period is the mean time between two renewals of one lock in the window.
func (r renewResult) period() time.Duration {
	if r.renewed == 0 {
		return 0
	}
	return time.Duration(float64(r.window) * float64(r.locks) / float64(r.renewed))
}

// renewSetup flushes the server (and again at cleanup) and returns a control client
// and a holder field ("<uuid>:1", as an rlock client would write it).
func renewSetup(t *testing.T, srv *redistest.Server, name string) (rueidis.Client, string) {
	ctl := namedClient(t, srv, name+"-ctl")
	require.NoError(t, do(ctl, ctl.B().Flushall().Build()).Error())
	t.Cleanup(func() { _ = do(ctl, ctl.B().Flushall().Build()).Error() })
	return ctl, uuid.NewString() + ":1"
}

// window measures the renewer for renewIntervals intervals starting mid-interval, then checks
// the TTLs (by then more than a lease has passed since registration, so every key would be
// gone without renewal).
func window(t *testing.T, r *renewResult, ctl rueidis.Client, prefix string, registered time.Time,
	stats func() (calls, renewed, failed uint64), spans func(from, to time.Time) durs) {
	time.Sleep(r.interval / 2)
	c0, rc0 := cpuTime(t), serverCPU(t, ctl)
	s0c, s0r, s0f := stats()
	peak := goroutinePeak()
	from := time.Now()
	time.Sleep(time.Duration(renewIntervals) * r.interval)
	to := time.Now()
	r.goroutines = peak()
	s1c, s1r, s1f := stats()
	r.cpu, r.redisCPU = cpuTime(t)-c0, serverCPU(t, ctl)-rc0
	r.window = to.Sub(from)
	r.calls, r.renewed, r.failed = s1c-s0c, s1r-s0r, s1f-s0f
	r.passes = spans(from, to)
	if wait := renewLease + r.interval - time.Since(registered); wait > 0 {
		time.Sleep(wait)
	}
	r.checkedAt = time.Since(registered)
	var err error
	r.bad, r.minTTL, err = ttlCheck(ctl, prefix, r.locks)
	require.NoError(t, err)
}

func measureWheel(t *testing.T, srv *redistest.Server) renewResult {
	ctl, field := renewSetup(t, srv, "bench-wheel")
	tc := &timedClient{Client: namedClient(t, srv, "bench-wheel"), passes: newSpanLog(1000)}
	var gone atomic.Int64
	w, err := renewal.New(tc, renewal.Options{Lease: renewLease, BatchSize: renewBatch,
		OnGone: func(string, string, uint64) { gone.Add(1) }})
	require.NoError(t, err)
	t.Cleanup(w.Close)
	r := renewResult{kind: "renewal.Wheel", locks: renewLocks, interval: renewLease / 3, idleMeasured: true}

	c0 := cpuTime(t)
	time.Sleep(idleWindow)
	r.idleCPU = cpuTime(t) - c0

	const prefix = "bench:renew:wheel:"
	h0 := heapAfterGC()
	r.addWall, err = createLocks(ctl, prefix, field, renewLocks, renewLease, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			w.Add(lockKey(prefix, i), strings.Clone(field), uint64(i+1))
		}
	})
	require.NoError(t, err)
	registered := time.Now()
	r.heapAdded = float64(int64(heapAfterGC())-int64(h0)) / renewLocks

	window(t, &r, ctl, prefix, registered,
		func() (uint64, uint64, uint64) { s := w.Stats(); return s.Calls, s.Renewed, s.Failed },
		func(from, to time.Time) durs {
			var d durs
			for _, s := range tc.passes.within(from, to) {
				d = append(d, s.end.Sub(s.start))
			}
			return d
		})
	tc.mu.Lock()
	r.passCmds = slices.Clone(tc.passCmds)
	tc.mu.Unlock()
	r.heapSteady = float64(int64(heapAfterGC())-int64(h0)) / renewLocks
	r.remaining = renewLocks - int(gone.Load())
	r.lostNotHeld = int(gone.Load()) // the wheel reports fields gone; lease expiry is the registry's call
	w.Close()
	return r
}

func measureNaive(t *testing.T, srv *redistest.Server, locks int) renewResult {
	ctl, field := renewSetup(t, srv, "bench-naive")
	rc := namedClient(t, srv, "bench-naive")
	// Load the script once so the burst does not fall back to EVAL.
	require.NoError(t, naiveRenewScript.Exec(context.Background(), rc, []string{"bench:warm"}, []string{"1", "x"}).Error())
	nr := newNaiveRenewer(rc, renewLease, locks*(renewIntervals+4))
	t.Cleanup(nr.Close)
	r := renewResult{kind: fmt.Sprintf("naive AfterFunc %dk", locks/1000), locks: locks, interval: nr.interval}

	const prefix = "bench:renew:naive:"
	h0 := heapAfterGC()
	var err error
	r.addWall, err = createLocks(ctl, prefix, field, locks, renewLease, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			nr.Add(lockKey(prefix, i), strings.Clone(field))
		}
	})
	require.NoError(t, err)
	registered := time.Now()
	r.heapAdded = float64(int64(heapAfterGC())-int64(h0)) / float64(locks)

	window(t, &r, ctl, prefix, registered,
		func() (uint64, uint64, uint64) { return nr.calls.Load(), nr.renewed.Load(), nr.failed.Load() },
		func(from, to time.Time) durs { return bursts(nr.spans.within(from, to), r.interval/4) })
	r.heapSteady = float64(int64(heapAfterGC())-int64(h0)) / float64(locks)
	r.remaining = nr.active()
	r.lostNotHeld = int(nr.lost.Load())
	nr.Close()
	return r
}

func writeRenewal(out *strings.Builder, w renewResult, others ...renewResult) {
	fmt.Fprintf(out, "\n4. Renewal of %d watchdog locks held by one client (lease %v, interval %v, batch %d)\n",
		w.locks, renewLease, w.interval, renewBatch)
	fmt.Fprintf(out, "   (the last column is the naive renewer at a tenth of the locks, for scale)\n")
	fmt.Fprintf(out, "   Locks written with pipelined HINCRBY+PEXPIRE (field <uuid>:1), then registered; measured over\n")
	fmt.Fprintf(out, "   %d intervals starting mid-interval. Heap = HeapAlloc delta after GC / locks (includes the name\n", renewIntervals)
	fmt.Fprintf(out, "   and field strings the renewer keeps). CPU = getrusage(SELF) of the test process.\n")
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	row := func(label string, f func(r renewResult) string) {
		fmt.Fprintf(tw, "   %s\t%s\t", label, f(w))
		for _, o := range others {
			fmt.Fprintf(tw, "%s\t", f(o))
		}
		fmt.Fprintf(tw, "\n")
	}
	row("", func(r renewResult) string { return r.kind })
	row("locks registered", func(r renewResult) string { return fmt.Sprint(r.locks) })
	row("register all (time in Add)", func(r renewResult) string { return ms(r.addWall) })
	row("script calls / interval (wall)", func(r renewResult) string { return fmt.Sprintf("%.0f", r.perInterval(r.calls)) })
	row("locks renewed / interval (wall)", func(r renewResult) string { return fmt.Sprintf("%.0f", r.perInterval(r.renewed)) })
	row("script calls / renewal of all locks", func(r renewResult) string { return fmt.Sprintf("%.0f", r.perCycle(r.calls)) })
	row("effective renewal period", func(r renewResult) string { return ms(r.period()) })
	row("failed calls in window", func(r renewResult) string { return fmt.Sprint(r.failed) })
	row("passes in window", func(r renewResult) string { return fmt.Sprint(len(r.passes)) })
	row("pass wall time p50", func(r renewResult) string { return ms(r.passes.pct(.5)) })
	row("pass wall time max", func(r renewResult) string { return ms(r.passes.max()) })
	row("heap / lock, registered", func(r renewResult) string { return fmt.Sprintf("%.0f B", r.heapAdded) })
	row("heap / lock, after window", func(r renewResult) string { return fmt.Sprintf("%.0f B", r.heapSteady) })
	row("process CPU / interval", func(r renewResult) string {
		return ms(time.Duration(float64(r.cpu) / (float64(r.window) / float64(r.interval))))
	})
	row("redis-server CPU / interval", func(r renewResult) string {
		return ms(time.Duration(float64(r.redisCPU) / (float64(r.window) / float64(r.interval))))
	})
	row("process CPU, 0 locks, 5 s", func(r renewResult) string {
		if !r.idleMeasured {
			return "n/a (no timers)"
		}
		return ms(r.idleCPU)
	})
	row("peak goroutines in window", func(r renewResult) string { return fmt.Sprint(r.goroutines) })
	row("TTL check at (since registration)", func(r renewResult) string { return ms(r.checkedAt) })
	row("locks without TTL > 0", func(r renewResult) string { return fmt.Sprint(r.bad) })
	row("still renewed at the end", func(r renewResult) string { return fmt.Sprint(r.remaining) })
	row("reported lost: field gone", func(r renewResult) string { return fmt.Sprint(r.lostNotHeld) })
	row("reported lost: lease expired", func(r renewResult) string { return fmt.Sprint(r.lostExpired) })
	row("smallest PTTL", func(r renewResult) string { return ms(r.minTTL) })
	_ = tw.Flush()
	cmds := map[int]int{}
	for _, c := range w.passCmds {
		cmds[c]++
	}
	fmt.Fprintf(out, "   wheel pipelines (EVALSHA per DoMulti -> count): %v; each pass also sends 1 SCRIPT LOAD\n", cmds)
	calls, cycle := w.perInterval(w.calls), w.perCycle(w.calls)
	fmt.Fprintf(out, "   Goals (wheel): calls/interval %.0f (%.0f per renewal of all locks) <= 1000: %s; heap/lock %.0f B <= 1 KiB: %s;\n",
		calls, cycle, goal(calls <= 1000 && cycle <= 1000), w.heapSteady, goal(w.heapSteady <= 1024))
	fmt.Fprintf(out, "   all keys kept: %s; renewal period %s for a nominal %v: %s\n", goal(w.bad == 0 && w.remaining == w.locks), ms(w.period()),
		w.interval, goal(w.period() <= w.interval*11/10))
}
