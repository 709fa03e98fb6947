package bench

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestRenderFake renders the report and the chart from made-up numbers, so that the
// rendering code runs in every `go test` (no Redis, well under a second).
// GOREDISSON_BENCH_FAKE_PNG=path keeps the PNG for a look.
func TestRenderFake(t *testing.T) {
	r := fakeResult()
	md := renderCompare(r)
	for _, want := range []string{"## What this run shows", "## Goals", "(a) uncontended", "cancelable ctx", "below bsm", "(b) throughput", "Handoff with", "Renewal at", "(d) ≤ 1,000", "allocations / op", compareCommand, "Java"} {
		require.Contains(t, md, want)
	}
	dir := t.TempDir()
	doc := filepath.Join(dir, "BENCHMARKS.md")
	require.NoError(t, os.WriteFile(doc, []byte("# Title\n\nintro\n\n"+genBegin+"\nold\n"+genEnd+"\n\nafter\n"), 0o644))
	require.NoError(t, writeGenerated(doc, md))
	b, err := os.ReadFile(doc)
	require.NoError(t, err)
	s := string(b)
	require.True(t, strings.HasPrefix(s, "# Title\n\nintro\n\n"+genBegin))
	require.True(t, strings.HasSuffix(s, genEnd+"\n\nafter\n"))
	require.NotContains(t, s, "\nold\n")
	png := filepath.Join(dir, "b.png")
	if p := os.Getenv("GOREDISSON_BENCH_FAKE_PNG"); p != "" {
		png = p
	}
	require.NoError(t, renderChart(r, png))
	st, err := os.Stat(png)
	require.NoError(t, err)
	require.Greater(t, st.Size(), int64(10_000))
}

func fakeDurs(center time.Duration) durs {
	var d durs
	for i := range 100 {
		d = append(d, center*time.Duration(80+i)/100)
	}
	return d
}

func fakeResult() *compareResult {
	r := &compareResult{started: time.Now(), took: 5 * time.Minute,
		machine: machineInfo{cpu: "Test CPU", cores: 2, gomaxprocs: 2, goVersion: "go1.x", redis: "7.0.15", mode: "process"},
		load:    map[string]string{"start": "1.00 1.00 1.00", "renewal": "2.00 2.00 2.00"}, hoMore: map[string][]hoRow{}}
	for i, c := range goContenders() {
		r.unc = append(r.unc, uncRow{name: c.name, short: c.short, d: fakeDurs(time.Duration(150+20*i) * time.Microsecond), allocs: float64(10 + i)})
		if i == 0 {
			r.unc = append(r.unc, uncRow{name: c.name + ", cancelable ctx", short: "goredisson\ncancel-ctx", d: fakeDurs(160 * time.Microsecond), allocs: 12})
		}
		r.thr = append(r.thr, thrRow{name: c.name, short: c.short, acqs: int64(20000 - 2000*i), window: time.Second, lat: fakeDurs(time.Millisecond),
			cmds: cmdCount{cmds: map[string]int64{"evalsha": 2, "ping": 1}, acqs: 1}})
		h := hoRow{name: c.name, short: c.short, samples: fakeDurs(time.Duration(1+10*i) * time.Millisecond), unlocks: fakeDurs(time.Millisecond),
			handoffs: 100, cmds: cmdCount{cmds: map[string]int64{"evalsha": int64(100 * (i + 1))}, acqs: 100}}
		r.ho = append(r.ho, h)
		r.hoMore["hold100"] = append(r.hoMore["hold100"], h)
		r.hoMore["one"] = append(r.hoMore["one"], h)
	}
	r.ho = append(r.ho, hoRow{name: "Java", short: "Java\nRedisson", java: true, samples: fakeDurs(20 * time.Millisecond), handoffs: 100,
		cmds: cmdCount{cmds: map[string]int64{"evalsha": 1900}, acqs: 100}})
	r.unc = append(r.unc, uncRow{name: "floor: PING", short: "PING", floor: true, d: fakeDurs(40 * time.Microsecond)},
		uncRow{name: "floor: 2 × EVALSHA", short: "2×EVALSHA", floor: true, d: fakeDurs(100 * time.Microsecond)})
	r.thr = append(r.thr, thrRow{name: "floor", short: "2×EVALSHA", floor: true, acqs: 30000, window: time.Second})
	r.hoFloor = fakeDurs(500 * time.Microsecond)
	r.javaPipe = fakeDurs(150 * time.Microsecond)
	w := renewResult{kind: "wheel", locks: 100000, interval: time.Second, window: 5 * time.Second, calls: 5000, renewed: 500000}
	r.renew = []renewResult{w, w, w}
	r.rlHeld = &heldExtra{}
	return r
}
