package bench

// TestFairHandoff: the fair lock's handoff with 1 and 16 waiters, against the RLock and
// Java Redisson's fair lock in the same run (docs/BENCHMARKS.md, "Fair lock").

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"text/tabwriter"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/require"

	"github.com/goredisson/goredisson/integration/javapeer"
	"github.com/goredisson/goredisson/internal/keys"
	"github.com/goredisson/goredisson/internal/redistest"
	"github.com/goredisson/goredisson/internal/redistest/rlocktest"
	"github.com/goredisson/goredisson/rlock"
)

// fairCommand reproduces the "Fair lock" section of docs/BENCHMARKS.md.
const fairCommand = "GOREDISSON_BENCH=1 go test -run TestFairHandoff -v -timeout 30m ./bench/"

// Sizes of TestFairHandoff (GOREDISSON_BENCH_QUICK=1 shrinks them).
var (
	fairBlocks   = 6  // latency blocks per contender and waiter count, alternating contenders
	fairPerBlock = 50 // measured handoffs per block
	fairWarm     = 3  // handoffs discarded at the start of each block
	fairMonitor  = 30 // handoffs of the separate MONITOR block (commands by sender)
)

const fairJVMs = 4 // JVMs of the Java contender; its participants are owner threads spread over them

// fairContender is one lock in TestFairHandoff: participants, each its own simulated
// process (Java: an owner thread of one of fairJVMs JVMs), pass one lock around.
type fairContender struct {
	name    string
	lock    string // the lock's name
	parts   []proc // participant 0 first
	ctl     rueidis.Client
	pollCmd string                // the command queue sends, as INFO names it
	queue   func() (int64, error) // how many wait, as the control client sees it
	rows    map[int]*fairRow      // by waiter count
}

// fairRow is one contender's figures at one waiter count.
type fairRow struct {
	samples           durs
	cmds              cmdCount // INFO commandstats over the latency blocks (script internals included)
	client, scripted  float64  // per acquisition, from the MONITOR block: sent by clients, run inside scripts
	clientBreak       string
	notReady, handoff int
}

func TestFairHandoff(t *testing.T) {
	if os.Getenv(EnvBench) != "1" {
		t.Skipf("measurements: set %s=1 to run (see bench/README.md)", EnvBench)
	}
	if os.Getenv(EnvBenchQuick) == "1" {
		fairBlocks, fairPerBlock, fairWarm, fairMonitor = 1, 10, 2, 10
	}
	srv := redistest.Start(t)
	ctl := namedClient(t, srv, "fair-ctl")
	begin := time.Now()
	var cs []*fairContender
	llen := func(name string) func() (int64, error) {
		return func() (int64, error) { return do(ctl, ctl.B().Llen().Key(keys.FairQueue(name)).Build()).AsInt64() }
	}
	const maxParts = 17
	goFair := &fairContender{name: "goredisson NewFairLock", lock: "bench:fair:go", ctl: ctl, pollCmd: "llen"}
	goRLock := &fairContender{name: "goredisson NewLock (RLock)", lock: "bench:fair:rlock", ctl: ctl, pollCmd: "pubsub|numsub"}
	for i := range maxParts {
		goFair.parts = append(goFair.parts, &rlockProc{c: rlocktest.NewClient(t, namedClient(t, srv, procName("fair-go", i)), rlock.Options{}), fair: true})
		goRLock.parts = append(goRLock.parts, newRlockProc(false)(t, srv, procName("fair-rl", i)))
	}
	goFair.queue = llen(goFair.lock)
	goRLock.queue = func() (int64, error) { return numsub(ctl, keys.LockChannel(goRLock.lock)) }
	cs = append(cs, goFair, goRLock)
	javaNote := ""
	if jar, why := javaJar(t); jar == "" {
		javaNote = why
	} else {
		j := &fairContender{name: fmt.Sprintf("Java Redisson 4.7.0 getFairLock (%d JVMs)", fairJVMs), lock: "bench:fair:java",
			ctl: ctl, pollCmd: "llen"}
		var peers []*javapeer.Peer
		for range fairJVMs {
			peers = append(peers, javapeer.Start(t, jar, "redis://"+srv.Addr, javapeer.WithJVMArgs("-Xmx128m")))
		}
		for i := range maxParts {
			j.parts = append(j.parts, &javaProc{p: peers[i%fairJVMs], owner: fmt.Sprintf("o%d", i), typ: "fair."})
		}
		j.queue = llen(j.lock)
		cs = append(cs, j)
	}
	for _, c := range cs {
		c.rows = map[int]*fairRow{}
	}
	for _, waiters := range []int{1, 16} {
		for _, c := range cs {
			c.rows[waiters] = &fairRow{}
			t.Run(fmt.Sprintf("w%d/monitor/%s", waiters, c.lock), func(t *testing.T) {
				c.monitorBlock(t, srv, waiters)
			})
		}
		for b := range fairBlocks {
			for _, c := range rotated(cs, b) {
				t.Run(fmt.Sprintf("w%d/block%d/%s", waiters, b, c.lock), func(t *testing.T) {
					require.NoError(t, c.block(waiters, fairWarm, fairPerBlock, nil))
				})
			}
		}
	}
	fmt.Print(fairReport(cs, javaNote, time.Since(begin)))
}

// fairReport renders the figures as the markdown of docs/BENCHMARKS.md's section.
func fairReport(cs []*fairContender, javaNote string, took time.Duration) string {
	var b strings.Builder
	p := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	p("\n=== fair lock handoff (%s) ===\n\n", took.Round(time.Second))
	tw := tabwriter.NewWriter(&b, 0, 0, 1, ' ', tabwriter.Debug)
	fmt.Fprintln(tw, "| lock | waiters | handoffs | p50 | p99 | 16 ÷ 1 (p50) | commands / acq (INFO) | sent by clients / acq | run in scripts / acq | not ready |")
	fmt.Fprintln(tw, "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
	for _, c := range cs {
		for _, w := range []int{1, 16} {
			r := c.rows[w]
			ratio := "—"
			if w == 16 && len(c.rows[1].samples) > 0 && len(r.samples) > 0 {
				ratio = fmt.Sprintf("%.2f", float64(r.samples.pct(0.5))/float64(c.rows[1].samples.pct(0.5)))
			}
			fmt.Fprintf(tw, "| %s | %d | %d | %s | %s | %s | %.2f | %.2f | %.2f | %d |\n", c.name, w, len(r.samples),
				ms(r.samples.pct(0.5)), ms(r.samples.pct(0.99)), ratio, r.cmds.per(), r.client, r.scripted, r.notReady)
		}
	}
	_ = tw.Flush()
	p("\nSent by clients, per acquisition (MONITOR block):\n")
	for _, c := range cs {
		for _, w := range []int{1, 16} {
			p("  %s, %d waiters: %s\n", c.name, w, c.rows[w].clientBreak)
		}
	}
	if javaNote != "" {
		p("\n%s\n", javaNote)
	}
	return b.String()
}

// block runs warm+measured handoffs of c's lock among waiters+1 participants, then lets
// every waiter take the lock once and leave. Participant 0 takes the lock first; a holder
// waits (at most hoReadyMax) until every other participant waits (c.queue reports
// waiters), sleeps a random 1-5 ms, notes the time and releases, then queues again; the
// participant whose lock call returns next records the delay and holds. INFO commandstats
// is read right after the warm-th and the last measured acquisition, unless atMeasured is
// set: then it is called at those two moments instead.
func (c *fairContender) block(waiters, warm, measured int, atMeasured func(first bool) error) error {
	parts := c.parts[:waiters+1]
	row := c.rows[waiters]
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	var (
		mu         sync.Mutex
		k          int
		releasedAt atomic.Int64
		stop       atomic.Bool
		s0         map[string]int64
		polls0     int64
		polls      atomic.Int64
		base       = time.Now()
		samples    durs
		errs       = make(chan error, len(parts))
	)
	stats := func() (map[string]int64, error) { return cmdStats(c.ctl) }
	first, err := parts[0].lock(ctx, c.lock)
	if err != nil {
		return fmt.Errorf("first lock: %w", err)
	}
	run := func(i int, rel func() error) error {
		p := parts[i]
		for {
			if rel == nil {
				r, err := p.lock(ctx, c.lock)
				if err != nil {
					return fmt.Errorf("participant %d: lock: %w", i, err)
				}
				at := time.Since(base)
				if stop.Load() {
					return r()
				}
				rel = r
				relAt := releasedAt.Swap(0)
				if relAt == 0 {
					_ = rel()
					return fmt.Errorf("participant %d acquired with no release pending", i)
				}
				mu.Lock()
				k++
				if k > warm {
					samples = append(samples, at-time.Duration(relAt))
				}
				var err2 error
				switch k {
				case warm:
					if atMeasured != nil {
						err2 = atMeasured(true)
					} else {
						s0, err2 = stats()
					}
					polls0 = polls.Load()
				case warm + measured:
					if atMeasured != nil {
						err2 = atMeasured(false)
					} else {
						var s1 map[string]int64
						s1, err2 = stats()
						if err2 == nil {
							row.cmds.add(s0, s1, map[string]int64{c.pollCmd: polls.Load() - polls0}, int64(measured))
						}
					}
					stop.Store(true)
					mu.Unlock()
					return errors.Join(err2, rel())
				}
				mu.Unlock()
				if err2 != nil {
					_ = rel()
					return err2
				}
			}
			deadline := time.Now().Add(hoReadyMax)
			for {
				polls.Add(1)
				n, err := c.queue()
				if err != nil {
					_ = rel()
					return err
				}
				if n >= int64(waiters) {
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
			time.Sleep(time.Millisecond + rand.N(4*time.Millisecond))
			releasedAt.Store(int64(time.Since(base)))
			err := rel()
			rel = nil
			if err != nil {
				return fmt.Errorf("participant %d: release: %w", i, err)
			}
			if stop.Load() {
				return nil
			}
		}
	}
	var wg sync.WaitGroup
	for i := range parts {
		wg.Go(func() {
			var rel func() error
			if i == 0 {
				rel = first
			}
			errs <- run(i, rel)
		})
	}
	wg.Wait()
	close(errs)
	var all []error
	for e := range errs {
		all = append(all, e)
	}
	if atMeasured == nil {
		mu.Lock()
		row.samples = append(row.samples, samples...)
		row.handoff += len(samples)
		mu.Unlock()
	}
	return errors.Join(all...)
}

// monitorBlock runs fairMonitor handoffs with MONITOR on and counts, per acquisition, the
// commands clients sent (control commands excluded) and the commands scripts ran.
func (c *fairContender) monitorBlock(t *testing.T, srv *redistest.Server, waiters int) {
	var m *monitor
	row := c.rows[waiters]
	marker := fmt.Sprintf("fair-marker-%s-%d", c.lock, waiters)
	err := c.block(waiters, 2, fairMonitor, func(first bool) error {
		if first {
			m = startMonitor(t, srv.Addr)
			return nil
		}
		return do(c.ctl, c.ctl.B().Echo().Message(marker).Build()).Error()
	})
	require.NoError(t, err)
	cmds := m.stopAt(t, marker)
	sent, scripted := map[string]int64{}, int64(0)
	for _, x := range cmds {
		switch {
		case x.from == "lua":
			scripted++
		case x.cmd == "llen" || x.cmd == "pubsub|numsub" || x.cmd == "echo" || x.cmd == "ping" || x.cmd == "info":
			// the control client's, or keepalive
		default:
			sent[x.cmd]++
		}
	}
	var n int64
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(sent)) {
		n += sent[k]
		parts = append(parts, fmt.Sprintf("%s %.2f", k, float64(sent[k])/float64(fairMonitor)))
	}
	row.client = float64(n) / float64(fairMonitor)
	row.scripted = float64(scripted) / float64(fairMonitor)
	row.clientBreak = strings.Join(parts, ", ")
}
