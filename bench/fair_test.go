package bench

// TestFairHandoff: the fair lock's handoff with 1 and 16 waiters, against the RLock and
// Java Redisson's fair lock in the same run (docs/BENCHMARKS.md, "Fair lock"), on the
// handoff harness of TestCompare (hoContender.block).

import (
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"text/tabwriter"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/goredisson/goredisson/integration/javapeer"
	"github.com/goredisson/goredisson/internal/redistest"
	"github.com/goredisson/goredisson/internal/redistest/rlocktest"
	"github.com/goredisson/goredisson/rlock"
)

// fairCommand reproduces the "Fair lock" section of docs/BENCHMARKS.md.
const fairCommand = "GOREDISSON_BENCH=1 go test -run TestFairHandoff -v -timeout 30m ./bench/"

// fairJVMs is how many JVMs the Java contender runs; its participants are owner threads
// spread over them.
const fairJVMs = 4

// fairSplit is what the MONITOR block of one contender and waiter count found, per
// acquisition: commands sent by clients (the control client's excluded) and commands run
// inside scripts.
type fairSplit struct {
	client, scripted float64
	breakdown        string
}

func TestFairHandoff(t *testing.T) {
	if os.Getenv(EnvBench) != "1" {
		t.Skipf("measurements: set %s=1 to run (see bench/README.md)", EnvBench)
	}
	blocks, perBlock, warm, monitored := hoBlocks, hoPerBlock, hoWarm, 30
	if os.Getenv(EnvBenchQuick) == "1" {
		blocks, perBlock, warm, monitored = 1, 10, 2, 10
	}
	begin := time.Now()
	srv := redistest.Start(t)
	ctl := namedClient(t, srv, "fair-ctl")
	goFair := &hoContender{name: "goredisson NewFairLock", kind: waitsQueue, lock: "bench:fair:go", callMax: hoCallMax}
	goRLock := &hoContender{name: "goredisson NewLock (RLock)", kind: waitsPubSub, lock: "bench:fair:rlock", callMax: hoCallMax}
	for j := range hoWaiters + 1 {
		goFair.parts = append(goFair.parts, &rlockProc{c: rlocktest.NewClient(t, namedClient(t, srv, procName("fair-go", j)), rlock.Options{}), fair: true})
		name := procName("fair-rl", j)
		goRLock.names = append(goRLock.names, name)
		goRLock.parts = append(goRLock.parts, newRlockProc(false)(t, srv, name))
	}
	names := goRLock.names
	goFair.watch = &subWatch{ctl: ctl}
	goRLock.watch = &subWatch{ctl: ctl, match: func(c clientConn) bool { return slices.Contains(names, c.Name) }}
	hs := []*hoContender{goFair, goRLock}
	javaNote := ""
	if jar, why := javaJar(t); jar == "" {
		javaNote = why
	} else {
		j := &hoContender{name: fmt.Sprintf("Java Redisson 4.7.0 getFairLock (%d JVMs)", fairJVMs), java: true,
			kind: waitsQueue, lock: "bench:fair:java", watch: &subWatch{ctl: ctl}}
		var peers []*javapeer.Peer
		for range fairJVMs {
			peers = append(peers, javapeer.Start(t, jar, "redis://"+srv.Addr, javapeer.WithJVMArgs("-Xmx128m")))
		}
		for i := range hoWaiters + 1 {
			j.parts = append(j.parts, &javaProc{p: peers[i%fairJVMs], owner: fmt.Sprintf("o%d", i), typ: "fair."})
		}
		hs = append(hs, j)
	}
	splits := map[string]fairSplit{}
	variants := []hoVariant{
		{key: "w1", title: "1 waiter", n: 2, blocks: blocks, perBlock: perBlock, warmups: warm},
		{key: "w16", title: "16 waiters", n: hoWaiters + 1, blocks: blocks, perBlock: perBlock, warmups: warm},
	}
	for _, h := range hs {
		h.key = h.lock
		h.rows = map[string]*hoRow{}
		h.inLock = make([]atomic.Bool, len(h.parts))
		h.entered = make([]atomic.Int64, len(h.parts))
	}
	for _, v := range variants {
		for _, h := range hs {
			mv := v
			mv.perBlock, mv.warmups = monitored, 2
			h.rows["monitor"] = &hoRow{}
			var m *monitor
			marker := "fair-marker-" + h.lock + "-" + v.key
			h.atMeasured = func(first bool) error {
				if first {
					m = startMonitor(t, srv.Addr)
					return nil
				}
				return do(ctl, ctl.B().Echo().Message(marker).Build()).Error()
			}
			t.Run(v.key+"/monitor/"+h.lock, func(t *testing.T) { require.NoError(t, h.block(ctl, mv, h.rows["monitor"])) })
			h.atMeasured = nil
			splits[h.lock+v.key] = fairMonitored(m.stopAt(t, marker), monitored)
			h.rows[v.key] = &hoRow{name: h.name, java: h.java}
		}
		for b := range v.blocks {
			for _, h := range rotated(hs, b) {
				t.Run(fmt.Sprintf("%s/block%d/%s", v.key, b, h.lock), func(t *testing.T) {
					require.NoError(t, h.block(ctl, v, h.rows[v.key]))
				})
			}
		}
	}
	fmt.Print(fairReport(hs, splits, javaNote, time.Since(begin)))
}

// fairMonitored splits the commands MONITOR saw over n handoffs into those clients sent
// (the control client's LLEN, PUBSUB, CLIENT LIST, INFO and ECHO, and PING, excluded) and
// those scripts ran.
func fairMonitored(cmds []monitored, n int) fairSplit {
	sent, scripted := map[string]int64{}, int64(0)
	for _, c := range cmds {
		switch {
		case c.from == "lua":
			scripted++
		case c.cmd == "llen" || c.cmd == "pubsub|numsub" || c.cmd == "client|list" || c.cmd == "info" ||
			c.cmd == "echo" || c.cmd == "ping":
		default:
			sent[c.cmd]++
		}
	}
	var total int64
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(sent)) {
		total += sent[k]
		parts = append(parts, fmt.Sprintf("%s %.2f", k, float64(sent[k])/float64(n)))
	}
	return fairSplit{client: float64(total) / float64(n), scripted: float64(scripted) / float64(n), breakdown: strings.Join(parts, ", ")}
}

// fairReport renders the figures as the table of docs/BENCHMARKS.md's section.
func fairReport(hs []*hoContender, splits map[string]fairSplit, javaNote string, took time.Duration) string {
	var b strings.Builder
	fmt.Fprintf(&b, "\n=== fair lock handoff (%s) ===\n\n", took.Round(time.Second))
	tw := tabwriter.NewWriter(&b, 0, 0, 1, ' ', tabwriter.Debug)
	fmt.Fprintln(tw, "| lock | waiters | handoffs | p50 | p99 | 16 ÷ 1 (p50) | commands / acq (INFO) | sent by clients / acq | run in scripts / acq | not ready | stalls |")
	fmt.Fprintln(tw, "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
	for _, h := range hs {
		for _, key := range []string{"w1", "w16"} {
			r, s := h.rows[key], splits[h.lock+key]
			ratio := "—"
			if key == "w16" && len(h.rows["w1"].samples) > 0 && len(r.samples) > 0 {
				ratio = fmt.Sprintf("%.2f", float64(r.samples.pct(0.5))/float64(h.rows["w1"].samples.pct(0.5)))
			}
			fmt.Fprintf(tw, "| %s | %s | %d | %s | %s | %s | %.2f | %.2f | %.2f | %d | %d |\n", h.name, strings.TrimPrefix(key, "w"),
				len(r.samples), ms(r.samples.pct(0.5)), ms(r.samples.pct(0.99)), ratio, r.cmds.per(), s.client, s.scripted, r.notReady, r.stalls)
		}
	}
	_ = tw.Flush()
	fmt.Fprintf(&b, "\nSent by clients, per acquisition (MONITOR block):\n")
	for _, h := range hs {
		for _, key := range []string{"w1", "w16"} {
			fmt.Fprintf(&b, "  %s, %s waiters: %s\n", h.name, strings.TrimPrefix(key, "w"), splits[h.lock+key].breakdown)
		}
	}
	if javaNote != "" {
		fmt.Fprintf(&b, "\n%s\n", javaNote)
	}
	fmt.Fprintf(&b, "\nReproduce: %s\n", fairCommand)
	return b.String()
}
