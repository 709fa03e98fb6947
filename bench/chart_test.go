package bench

import (
	"fmt"
	"image/color"
	"math"
	"os"
	"strings"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// Colours of the chart (colour-blind-safe Okabe-Ito).
var (
	colUnc   = color.RGBA{0x56, 0xB4, 0xE9, 0xff} // sky blue
	colHo50  = color.RGBA{0xE6, 0x9F, 0x00, 0xff} // orange
	colHo99  = color.RGBA{0xD5, 0x5E, 0x00, 0xff} // vermillion
	colThr   = color.RGBA{0x00, 0x9E, 0x73, 0xff} // bluish green
	colFloor = color.RGBA{0x99, 0x99, 0x99, 0xff}
)

// logMicros maps a duration to log10 of its microseconds: the latency panel plots these on
// a linear axis with decade labels (gonum's LogScale cannot draw bars, which start at 0).
func logMicros(d time.Duration) float64 {
	if d <= 0 {
		return 0
	}
	return math.Log10(float64(d) / float64(time.Microsecond))
}

// decadeTicks labels 10 µs ... 10 s and marks 2..9 of each decade.
type decadeTicks struct{}

func (decadeTicks) Ticks(min, max float64) []plot.Tick {
	labels := []string{"1 µs", "10 µs", "100 µs", "1 ms", "10 ms", "100 ms", "1 s", "10 s"}
	var ts []plot.Tick
	for e := 0; e < len(labels); e++ {
		v := float64(e)
		if v >= min-1e-9 && v <= max+1e-9 {
			ts = append(ts, plot.Tick{Value: v, Label: labels[e]})
		}
		for k := 2; k <= 9; k++ {
			if m := v + math.Log10(float64(k)); m >= min && m <= max {
				ts = append(ts, plot.Tick{Value: m})
			}
		}
	}
	return ts
}

// series is one set of bars of a panel.
type series struct {
	v     plotter.Values // log10 of µs on a latency panel (logMicros), raw values otherwise
	c     color.Color
	label string
}

// barPanel adds the bars of ss side by side per label, each bar with its value written
// above it by text, to pl.
func barPanel(pl *plot.Plot, labels []string, w vg.Length, ss []series, text func(v float64) string, rotate bool) error {
	for i, b := range ss {
		bars, err := plotter.NewBarChart(b.v, w)
		if err != nil {
			return err
		}
		bars.Color, bars.LineStyle.Width = b.c, 0
		bars.Offset = (vg.Length(i) - vg.Length(len(ss)-1)/2) * w
		pl.Add(bars)
		if b.label != "" {
			pl.Legend.Add(b.label, bars)
		}
		var xys plotter.XYs
		var texts []string
		for j, v := range b.v {
			if v > 0 {
				xys = append(xys, plotter.XY{X: float64(j), Y: v})
				texts = append(texts, text(v))
			}
		}
		if len(xys) == 0 {
			continue
		}
		lbl, err := plotter.NewLabels(plotter.XYLabels{XYs: xys, Labels: texts})
		if err != nil {
			return err
		}
		for k := range lbl.TextStyle {
			if rotate {
				lbl.TextStyle[k].Rotation = math.Pi / 2
				lbl.TextStyle[k].XAlign, lbl.TextStyle[k].YAlign = draw.XLeft, draw.YCenter
			} else {
				lbl.TextStyle[k].XAlign, lbl.TextStyle[k].YAlign = draw.XCenter, draw.YBottom
			}
			lbl.TextStyle[k].Font.Size = vg.Points(9)
		}
		lbl.Offset = vg.Point{X: bars.Offset, Y: vg.Points(3)}
		pl.Add(lbl)
	}
	pl.NominalX(labels...)
	pl.X.Tick.Label.Font.Size = vg.Points(10)
	pl.Y.Tick.Label.Font.Size = vg.Points(10)
	pl.Title.TextStyle.Font.Size = vg.Points(13)
	pl.Legend.Top, pl.Legend.Left = true, true
	pl.Legend.TextStyle.Font.Size = vg.Points(10)
	pl.Add(plotter.NewGrid())
	return nil
}

// floorLine draws a dashed horizontal reference line at y across n categories.
func floorLine(pl *plot.Plot, n int, y float64, label string, dash []vg.Length) error {
	line, err := plotter.NewLine(plotter.XYs{{X: -0.5, Y: y}, {X: float64(n) - 0.5, Y: y}})
	if err != nil {
		return err
	}
	line.Color, line.Width, line.Dashes = color.Black, vg.Points(1.2), dash
	pl.Add(line)
	pl.Legend.Add(label, line)
	return nil
}

func durText(v float64) string {
	return fmtDur(time.Duration(math.Pow(10, v) * float64(time.Microsecond)))
}

// renderChart writes the four-panel PNG, in the order a reader should take it in: the
// watchdog's renewal calls at 100k locks, the handoff against polling peers, the
// uncontended cost against the server's floor, and throughput.
func renderChart(r *compareResult, path string) error {
	s := summarize(r)
	dashed, dotted := []vg.Length{vg.Points(6), vg.Points(3)}, []vg.Length{vg.Points(2), vg.Points(2)}

	// 1. Renewal: script calls per interval, log scale.
	ren := plot.New()
	var rl []string
	var rv plotter.Values
	for i, w := range r.renew {
		name := [...]string{"goredisson\nwatchdog wheel", "1 timer + 1 call\nper lock (Extend)", "rueidislock\nauto-extend"}[min(i, 2)]
		rl = append(rl, fmt.Sprintf("%s\n%dk locks", name, w.locks/1000))
		rv = append(rv, math.Log10(max(w.perInterval(w.calls), 1)))
	}
	interval := time.Second
	if len(r.renew) > 0 {
		interval = r.renew[0].interval
	}
	ren.Title.Text = fmt.Sprintf("Watchdog renewal: script calls per %v interval\n(log scale, lower is better; keys lost: see (d))", interval)
	ren.Y.Label.Text = "calls / interval"
	ren.Y.Tick.Marker = plot.TickerFunc(func(min, max float64) []plot.Tick {
		var ts []plot.Tick
		for e := 0; float64(e) <= max+1e-9; e++ {
			if float64(e) >= min-1e-9 {
				ts = append(ts, plot.Tick{Value: float64(e), Label: fmt.Sprintf("%.0f", math.Pow(10, float64(e)))})
			}
		}
		return ts
	})
	if err := barPanel(ren, rl, vg.Points(40), []series{{v: rv, c: colThr}}, func(v float64) string { return fmt.Sprintf("%.0f", math.Pow(10, v)) }, false); err != nil {
		return err
	}
	ren.Y.Min, ren.Y.Max = 0, math.Ceil(slicesMax(rv)+0.3)

	// 2. Handoff p50 and p99 per contender (Java included), log scale, PING as the floor.
	ho := plot.New()
	var hl []string
	var h50, h99 plotter.Values
	for _, h := range r.ho {
		hl = append(hl, h.short)
		h50, h99 = append(h50, logMicros(h.samples.pct(.5))), append(h99, logMicros(h.samples.pct(.99)))
	}
	ho.Title.Text = fmt.Sprintf("Handoff to the next of %d waiters\n(log scale, lower is better; polling peers vs push)", hoWaiters)
	ho.Y.Tick.Marker = decadeTicks{}
	if err := barPanel(ho, hl, vg.Points(20), []series{{h50, colHo50, "p50"}, {h99, colHo99, "p99"}}, durText, true); err != nil {
		return err
	}
	if err := floorLine(ho, len(hl), logMicros(s.ping), "PING p50 (floor)", dashed); err != nil {
		return err
	}
	ho.Y.Min, ho.Y.Max = 1, math.Ceil(slicesMax(h99)+0.15)+1

	// 3. Uncontended acquire + release p50 per Go contender, with the server's floor.
	unc := plot.New()
	var ul []string
	var uv plotter.Values
	for _, u := range r.unc {
		if !u.floor {
			ul, uv = append(ul, u.short), append(uv, logMicros(u.d.pct(.5)))
		}
	}
	unc.Title.Text = "Uncontended acquire + release, p50\n(log scale, lower is better)"
	unc.Y.Tick.Marker = decadeTicks{}
	if err := barPanel(unc, ul, vg.Points(30), []series{{v: uv, c: colUnc}}, durText, true); err != nil {
		return err
	}
	if err := floorLine(unc, len(ul), logMicros(s.evalsha2), "2 × EVALSHA p50 (floor)", dotted); err != nil {
		return err
	}
	if err := floorLine(unc, len(ul), logMicros(s.ping), "PING p50", dashed); err != nil {
		return err
	}
	unc.Y.Min, unc.Y.Max = 1, math.Ceil(slicesMax(uv)+0.15)+0.6

	// 4. Throughput.
	var tl []string
	var tv, fv plotter.Values
	for _, t := range r.thr {
		tl = append(tl, t.short)
		if t.floor {
			tl[len(tl)-1] = "floor:\n2×EVALSHA"
			tv, fv = append(tv, 0), append(fv, t.perSec())
		} else {
			tv, fv = append(tv, t.perSec()), append(fv, 0)
		}
	}
	thr := plot.New()
	thr.Title.Text = fmt.Sprintf("Throughput, acquisitions/s (higher is better)\n%d goroutines, %d names, %d processes; %s, %d cores, load %s → %s",
		thrWorkers, thrNames, thrProcs, shortCPU(r.machine.cpu), r.machine.cores, r.load["start"], r.load["renewal"])
	thr.Y.Min = 0
	count := func(v float64) string { return fmt.Sprintf("%.0f", v) }
	if err := barPanel(thr, tl, vg.Points(30), []series{{v: tv, c: colThr}}, count, false); err != nil {
		return err
	}
	if err := barPanel(thr, tl, vg.Points(30), []series{{v: fv, c: colFloor}}, count, false); err != nil {
		return err
	}
	thr.Y.Max = max(slicesMax(tv), slicesMax(fv)) * 1.15
	thr.Y.Tick.Marker = plot.TickerFunc(func(min, max float64) []plot.Tick {
		ts := plot.DefaultTicks{}.Ticks(min, max)
		for i := range ts {
			if ts[i].Label != "" {
				ts[i].Label = fmt.Sprintf("%.0f", ts[i].Value)
			}
		}
		return ts
	})

	img := vgimg.NewWith(vgimg.UseWH(17*vg.Inch, 11*vg.Inch), vgimg.UseDPI(96))
	dc := draw.New(img)
	tiles := draw.Tiles{Rows: 2, Cols: 2, PadX: vg.Inch / 2, PadY: vg.Inch / 3, PadTop: vg.Inch / 8, PadBottom: vg.Inch / 8, PadLeft: vg.Inch / 8, PadRight: vg.Inch / 4}
	cs := plot.Align([][]*plot.Plot{{ren, ho}, {unc, thr}}, tiles, dc)
	ren.Draw(cs[0][0])
	ho.Draw(cs[0][1])
	unc.Draw(cs[1][0])
	thr.Draw(cs[1][1])
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := (vgimg.PngCanvas{Canvas: img}).WriteTo(f); err != nil {
		_ = f.Close()
		return err
	}
	return f.Close()
}

// slicesMax returns the largest of vs, 0 for none.
func slicesMax(vs plotter.Values) float64 {
	m := 0.0
	for _, v := range vs {
		m = max(m, v)
	}
	return m
}

// shortCPU trims a CPU model name for the chart title.
func shortCPU(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 40 {
		s = s[:40] + "…"
	}
	return s
}
