package bench

import (
	"context"
	"fmt"
	"math"
	"os"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/require"

	"github.com/goredisson/goredisson/integration/javapeer"
	"github.com/goredisson/goredisson/internal/redistest"
	"github.com/goredisson/goredisson/rlock"
)

// waiterScaleSizes are the waiter counts of TestWaiterScale; GOREDISSON_WAITERS overrides
// them ("1000,10000").
func waiterScaleSizes(t *testing.T) []int {
	spec := os.Getenv("GOREDISSON_WAITERS")
	if spec == "" {
		spec = "1000,10000,100000"
	}
	var out []int
	for _, f := range strings.Split(spec, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		require.NoError(t, err, "GOREDISSON_WAITERS")
		out = append(out, n)
	}
	return out
}

// TestWaiterScale: N goroutines each wait on a lock of its own name, all held by another
// client, and are released together: every waiter must acquire, none error. Reported: the
// time from the last release to the last acquisition, heap and stack per waiter while all
// wait, and SUBSCRIBE/UNSUBSCRIBE commands per acquisition. Sizes: GOREDISSON_WAITERS
// (default 1000,10000,100000); GOREDISSON_SCALE_HEAPPROFILE=FILE writes a heap profile
// taken while every waiter waits, and FILE.base one taken just before they start (for
// go tool pprof -diff_base).
func TestWaiterScale(t *testing.T) {
	if os.Getenv("GOREDISSON_BENCH") != "1" {
		t.Skip("GOREDISSON_BENCH=1 runs the waiter scale measurement")
	}
	var results []scaleResult
	for _, n := range waiterScaleSizes(t) {
		for _, clients := range []int{1, 16} {
			t.Run(fmt.Sprintf("%d-waiters-%d-clients", n, clients), func(t *testing.T) {
				srv := redistest.StartProcess(t, redistest.ProcessOptions{})
				admin := srv.Client(t)
				r := waiterScale(t, []rueidis.Client{admin}, func() rueidis.Client { return srv.Client(t) }, n, clients, rlock.Options{}, 1)
				r.setup = "one server"
				t.Logf("%s", r)
				results = append(results, r)
			})
		}
		// A cluster client listens both ways by default (Java services' pub/sub unknown);
		// the second row has its waiters listen with SSUBSCRIBE alone.
		for _, mode := range []rlock.PubSubMode{rlock.PubSubAuto, rlock.PubSubSharded} {
			setup := map[rlock.PubSubMode]string{
				rlock.PubSubAuto:    "cluster (3 masters)",
				rlock.PubSubSharded: "cluster (3 masters), waiters PubSubSharded",
			}[mode]
			t.Run(fmt.Sprintf("%d-waiters-cluster-pubsub%d", n, mode), func(t *testing.T) {
				c := redistest.StartCluster(t)
				var admins []rueidis.Client
				for _, addr := range c.Addrs() {
					admins = append(admins, c.NodeClient(t, addr))
				}
				kinds := map[rlock.PubSubMode]int64{rlock.PubSubAuto: 2, rlock.PubSubSharded: 1}[mode]
				r := waiterScale(t, admins, func() rueidis.Client { return c.Client(t) }, n, 1, rlock.Options{PubSub: mode}, kinds)
				r.setup = setup
				t.Logf("%s", r)
				results = append(results, r)
			})
		}
	}
	if jar, why := javaJar(t); jar == "" {
		t.Log(why)
	} else {
		for _, n := range waiterScaleSizes(t) {
			if n > javaScaleMax {
				continue
			}
			t.Run(fmt.Sprintf("%d-waiters-java", n), func(t *testing.T) {
				r := javaWaiterScale(t, jar, n)
				t.Logf("%s", r)
				results = append(results, r)
			})
		}
	}
	t.Logf("\n%s", scaleTable(results))
}

// orNA formats v with format, or "n/a" when it is NaN (not measured).
func orNA(v float64, format string) string {
	if math.IsNaN(v) {
		return "n/a"
	}
	return fmt.Sprintf(format, v)
}

// javaScaleMax is the largest waiter count tried with Java Redisson.
const javaScaleMax = 10_000

// javaWaiterScale is waiterScale for Java Redisson with its default configuration: one JVM,
// n lockAsync calls (one owner id each) on names a Go client holds, released together.
func javaWaiterScale(t *testing.T, jar string, n int) scaleResult {
	srv := redistest.StartProcess(t, redistest.ProcessOptions{})
	admin := srv.Client(t)
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Minute)
	defer cancel()
	holderC, err := rlock.New(ctx, srv.Client(t), rlock.Options{})
	require.NoError(t, err)
	defer holderC.Close()
	const prefix = "jscale:"
	name := func(i int) string { return prefix + strconv.Itoa(i) }
	holder := rlock.NewOwner(ctx)
	parallel(n, 64, func(i int) { require.NoError(t, holderC.NewLock(name(i)).Lock(holder)) })
	p := javapeer.Start(t, jar, "redis://"+srv.Addr, javapeer.WithJVMArgs("-Xmx1g"))
	redistest.Do(t, admin, admin.B().ConfigResetstat().Build())
	start := time.Now()
	p.Must(t, ctx, "S", "scale.start", prefix, strconv.Itoa(n))
	// Wait until the subscriptions stop growing (Redisson may never subscribe them all).
	seen, since := int64(-1), time.Now()
	for time.Since(since) < 3*time.Second && time.Since(start) < 2*time.Minute {
		if c := pubsubChannels(t, []rueidis.Client{admin}); c != seen {
			seen, since = c, time.Now()
		}
		if seen >= int64(n) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	subscribed := time.Since(start)
	var lastRelease atomic.Int64
	parallel(n, 64, func(i int) {
		require.NoError(t, holderC.NewLock(name(i)).Unlock(holder))
		now := time.Now().UnixNano()
		for old := lastRelease.Load(); now > old && !lastRelease.CompareAndSwap(old, now); old = lastRelease.Load() {
		}
	})
	res := p.Must(t, ctx, "S", "scale.result", "60000")
	fields := map[string]string{}
	for _, kv := range strings.Split(res, ",") {
		k, v, _ := strings.Cut(kv, "=")
		fields[k] = v
	}
	acquired, _ := strconv.Atoi(fields["acquired"])
	lastMs, _ := strconv.ParseInt(fields["last"], 10, 64)
	if fields["error"] != "-" {
		t.Logf("Java: first error %s", fields["error"])
	}
	t.Logf("Java: %d subscribed channels seen, %s", seen, res)
	p.Must(t, ctx, "S", "scale.release")
	stats := commandStats(t, admin)
	return scaleResult{
		setup: "Java Redisson 4.7.0, default config", n: n, clients: 1, errs: int64(n - acquired),
		subscribeAll:     subscribed,
		lastAfterRelease: time.Duration(lastMs*int64(time.Millisecond) - lastRelease.Load()),
		heapPer:          math.NaN(), stackPer: math.NaN(), goroutinesPer: math.NaN(),
		subPerAcq:   float64(stats["subscribe"]+stats["ssubscribe"]) / float64(n),
		unsubPerAcq: float64(stats["unsubscribe"]+stats["sunsubscribe"]) / float64(n),
	}
}

// scaleTable renders results as a Markdown table.
func scaleTable(results []scaleResult) string {
	var b strings.Builder
	b.WriteString("| waiters | setup | Clients | errors | all subscribed after | last acquired after last release | heap / waiter | stack / waiter | goroutines / waiter | SUBSCRIBE / acq | UNSUBSCRIBE / acq |\n")
	b.WriteString("|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, r := range results {
		fmt.Fprintf(&b, "| %d | %s | %d | %d | %v | %v | %s | %s | %s | %.3f | %.3f |\n",
			r.n, r.setup, r.clients, r.errs, r.subscribeAll.Round(time.Millisecond), r.lastAfterRelease.Round(time.Millisecond),
			orNA(r.heapPer, "%.0f B"), orNA(r.stackPer, "%.0f B"), orNA(r.goroutinesPer, "%.2f"), r.subPerAcq, r.unsubPerAcq)
	}
	return b.String()
}

type scaleResult struct {
	setup                  string
	goroutinesPer          float64
	n, clients             int
	errs                   int64
	subscribeAll           time.Duration // from the first Lock call until every waiter is subscribed
	lastAfterRelease       time.Duration
	heapPer, stackPer      float64
	subPerAcq, unsubPerAcq float64
}

func (r scaleResult) String() string {
	return fmt.Sprintf("waiters=%d clients=%d errors=%d all-subscribed-in=%v last-acquired-after-last-release=%v heap/waiter=%.0fB stack/waiter=%.0fB SUBSCRIBE/acq=%.3f UNSUBSCRIBE/acq=%.3f",
		r.n, r.clients, r.errs, r.subscribeAll.Round(time.Millisecond), r.lastAfterRelease.Round(time.Millisecond), r.heapPer, r.stackPer, r.subPerAcq, r.unsubPerAcq)
}

// waiterScale measures n waiters spread over clients Clients made with waiterOpts, against
// a holder with the default Options. Each waiter subscribes its channel kinds ways (1:
// SUBSCRIBE or SSUBSCRIBE; 2: both); all wait once the servers count that many channels
// per waiter.
func waiterScale(t *testing.T, admins []rueidis.Client, newRC func() rueidis.Client, n, clients int, waiterOpts rlock.Options, kinds int64) scaleResult {
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Minute)
	defer cancel()
	holderC, err := rlock.New(ctx, newRC(), rlock.Options{})
	require.NoError(t, err)
	defer holderC.Close()
	waiterCs := make([]*rlock.Client, clients)
	for i := range waiterCs {
		waiterCs[i], err = rlock.New(ctx, newRC(), waiterOpts)
		require.NoError(t, err)
		defer waiterCs[i].Close()
	}
	name := func(i int) string { return "scale:" + strconv.Itoa(i) }
	holder := rlock.NewOwner(ctx)
	parallel(n, 64, func(i int) { require.NoError(t, holderC.NewLock(name(i)).Lock(holder)) })
	for _, admin := range admins {
		redistest.Do(t, admin, admin.B().ConfigResetstat().Build())
	}
	g0 := runtime.NumGoroutine()

	var ms0 runtime.MemStats
	heap0 := heapAfterGC()
	runtime.ReadMemStats(&ms0)
	writeHeapProfile(t, ".base")
	var errs atomic.Int64
	var acquired sync.WaitGroup
	var lastDone atomic.Int64
	start := time.Now()
	acquired.Add(n)
	for i := range n {
		go func() {
			defer acquired.Done()
			l := waiterCs[i%clients].NewLock(name(i))
			octx := rlock.NewOwner(ctx)
			if err := l.Lock(octx); err != nil {
				if errs.Add(1) == 1 {
					t.Logf("first error: %v", err)
				}
				return
			}
			now := time.Now().UnixNano()
			for {
				old := lastDone.Load()
				if now <= old || lastDone.CompareAndSwap(old, now) {
					break
				}
			}
			_ = l.Unlock(octx)
		}()
	}
	deadline := time.Now().Add(5 * time.Minute)
	for pubsubChannels(t, admins)+kinds*errs.Load() < kinds*int64(n) {
		require.True(t, time.Now().Before(deadline), "waiters did not all subscribe: %d channels of %d", pubsubChannels(t, admins), kinds*int64(n))
		time.Sleep(10 * time.Millisecond)
	}
	subscribed := time.Since(start)
	goroutines := runtime.NumGoroutine() - g0
	var ms1 runtime.MemStats
	heap1 := heapAfterGC()
	runtime.ReadMemStats(&ms1)
	writeHeapProfile(t, "")

	var lastRelease atomic.Int64
	parallel(n, 64, func(i int) {
		require.NoError(t, holderC.NewLock(name(i)).Unlock(holder))
		now := time.Now().UnixNano()
		for {
			old := lastRelease.Load()
			if now <= old || lastRelease.CompareAndSwap(old, now) {
				break
			}
		}
	})
	acquired.Wait()
	stats := map[string]int64{}
	for _, admin := range admins {
		for k, v := range commandStats(t, admin) {
			stats[k] += v
		}
	}
	return scaleResult{
		n: n, clients: clients, errs: errs.Load(), subscribeAll: subscribed,
		lastAfterRelease: time.Duration(lastDone.Load() - lastRelease.Load()),
		heapPer:          float64(int64(heap1)-int64(heap0)) / float64(n),
		stackPer:         float64(int64(ms1.StackInuse)-int64(ms0.StackInuse)) / float64(n),
		goroutinesPer:    float64(goroutines) / float64(n),
		subPerAcq:        float64(stats["subscribe"]+stats["ssubscribe"]) / float64(n),
		unsubPerAcq:      float64(stats["unsubscribe"]+stats["sunsubscribe"]) / float64(n),
	}
}

// writeHeapProfile writes a heap profile to GOREDISSON_SCALE_HEAPPROFILE+suffix, if set.
func writeHeapProfile(t *testing.T, suffix string) {
	f := os.Getenv("GOREDISSON_SCALE_HEAPPROFILE")
	if f == "" {
		return
	}
	out, err := os.Create(f + suffix)
	require.NoError(t, err)
	require.NoError(t, pprof.WriteHeapProfile(out))
	require.NoError(t, out.Close())
}

// parallel runs f(0..n-1) on workers goroutines.
func parallel(n, workers int, f func(i int)) {
	var next atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for i := int(next.Add(1) - 1); i < n; i = int(next.Add(1) - 1) {
				f(i)
			}
		})
	}
	wg.Wait()
}

// pubsubChannels returns the channels subscribed on the servers of admins: INFO stats'
// pubsub_channels plus pubsubshard_channels, summed.
func pubsubChannels(t *testing.T, admins []rueidis.Client) int64 {
	var total int64
	for _, rc := range admins {
		info, err := do(rc, rc.B().Info().Section("stats").Build()).ToString()
		require.NoError(t, err)
		for _, line := range strings.Split(info, "\n") {
			k, v, ok := strings.Cut(strings.TrimSpace(line), ":")
			if ok && (k == "pubsub_channels" || k == "pubsubshard_channels") {
				n, _ := strconv.ParseInt(v, 10, 64)
				total += n
			}
		}
	}
	return total
}
