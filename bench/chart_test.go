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

// renderChart writes the two-panel PNG: latency (uncontended p50, handoff p50 and p99 per
// contender, log scale, with PING and 2×EVALSHA p50 as lines) and throughput (acq/s).
func renderChart(r *compareResult, path string) error {
	s := summarize(r)

	// Contenders in the order of (c), which has Java too.
	var labels []string
	var unc, ho50, ho99 plotter.Values
	uncOf := map[string]time.Duration{}
	for _, u := range r.unc {
		if !u.floor {
			uncOf[u.short] = u.d.pct(.5)
		}
	}
	top := 0.0
	for _, h := range r.ho {
		if _, ok := uncOf[h.short]; ok {
			labels = append(labels, h.short)
		} else {
			labels = append(labels, h.short+"\n(handoff only)")
		}
		unc = append(unc, logMicros(uncOf[h.short]))
		ho50 = append(ho50, logMicros(h.samples.pct(.5)))
		ho99 = append(ho99, logMicros(h.samples.pct(.99)))
		top = max(top, logMicros(h.samples.pct(.99)))
	}
	lat := plot.New()
	lat.Title.Text = fmt.Sprintf("Latency, log scale (lower is better)\n%d waiters for the handoff; %s, %d cores, load %s → %s",
		hoWaiters, shortCPU(r.machine.cpu), r.machine.cores, r.load["start"], r.load["renewal"])
	lat.Title.TextStyle.Font.Size = vg.Points(13)
	lat.Y.Tick.Marker = decadeTicks{}
	lat.Y.Label.Text = "latency"
	w := vg.Points(22)
	for i, b := range []struct {
		v     plotter.Values
		c     color.Color
		label string
	}{{unc, colUnc, "uncontended acquire+release p50"}, {ho50, colHo50, "handoff p50"}, {ho99, colHo99, "handoff p99"}} {
		bars, err := plotter.NewBarChart(b.v, w)
		if err != nil {
			return err
		}
		bars.Color, bars.LineStyle.Width = b.c, 0
		bars.Offset = vg.Length(i-1) * w
		lat.Add(bars)
		lat.Legend.Add(b.label, bars)
		// The value above each bar, rotated.
		var xys plotter.XYs
		var texts []string
		for j, v := range b.v {
			if v > 0 {
				xys = append(xys, plotter.XY{X: float64(j), Y: v})
				texts = append(texts, fmtDur(time.Duration(math.Pow(10, v)*float64(time.Microsecond))))
			}
		}
		lbl, err := plotter.NewLabels(plotter.XYLabels{XYs: xys, Labels: texts})
		if err != nil {
			return err
		}
		for k := range lbl.TextStyle {
			lbl.TextStyle[k].Rotation = math.Pi / 2
			lbl.TextStyle[k].XAlign = draw.XLeft
			lbl.TextStyle[k].YAlign = draw.YCenter
			lbl.TextStyle[k].Font.Size = vg.Points(9)
		}
		lbl.Offset = vg.Point{X: vg.Length(i-1) * w, Y: vg.Points(3)}
		lat.Add(lbl)
	}
	for _, ref := range []struct {
		d     time.Duration
		label string
		dash  []vg.Length
	}{{s.ping, "PING p50 (floor)", []vg.Length{vg.Points(6), vg.Points(3)}}, {s.evalsha2, "2 × EVALSHA p50 (floor)", []vg.Length{vg.Points(2), vg.Points(2)}}} {
		y := logMicros(ref.d)
		line, err := plotter.NewLine(plotter.XYs{{X: -0.5, Y: y}, {X: float64(len(labels)) - 0.5, Y: y}})
		if err != nil {
			return err
		}
		line.Color, line.Width, line.Dashes = color.Black, vg.Points(1.2), ref.dash
		lat.Add(line)
		lat.Legend.Add(ref.label, line)
	}
	lat.Legend.Top, lat.Legend.Left = true, true
	lat.Legend.TextStyle.Font.Size = vg.Points(11)
	lat.Add(plotter.NewGrid())
	lat.NominalX(labels...)
	lat.Y.Min, lat.Y.Max = 1, math.Ceil(top+0.15)+1 // from 10 µs; a decade of headroom for the legend and labels
	lat.X.Tick.Label.Font.Size = vg.Points(11)
	lat.Y.Tick.Label.Font.Size = vg.Points(11)

	// Throughput.
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
	thr.Title.Text = fmt.Sprintf("Throughput (higher is better)\n%d goroutines, %d names, %d processes, empty critical section", thrWorkers, thrNames, thrProcs)
	thr.Title.TextStyle.Font.Size = vg.Points(13)
	thr.Y.Label.Text = "acquisitions / s"
	thr.Y.Min = 0
	tb, err := plotter.NewBarChart(tv, vg.Points(36))
	if err != nil {
		return err
	}
	tb.Color, tb.LineStyle.Width = colThr, 0
	fb, err := plotter.NewBarChart(fv, vg.Points(36))
	if err != nil {
		return err
	}
	fb.Color, fb.LineStyle.Width = colFloor, 0
	thr.Add(plotter.NewGrid(), tb, fb)
	var xys plotter.XYs
	var texts []string
	topThr := 0.0
	for i := range tv {
		v := tv[i] + fv[i]
		topThr = max(topThr, v)
		xys = append(xys, plotter.XY{X: float64(i), Y: v})
		texts = append(texts, fmt.Sprintf("%.0f", v))
	}
	thr.Y.Max = topThr * 1.12
	thr.Y.Tick.Marker = plot.TickerFunc(func(min, max float64) []plot.Tick {
		ts := plot.DefaultTicks{}.Ticks(min, max)
		for i := range ts {
			if ts[i].Label != "" {
				ts[i].Label = fmt.Sprintf("%.0f", ts[i].Value)
			}
		}
		return ts
	})
	lbl, err := plotter.NewLabels(plotter.XYLabels{XYs: xys, Labels: texts})
	if err != nil {
		return err
	}
	for i := range lbl.TextStyle {
		lbl.TextStyle[i].XAlign = draw.XCenter
		lbl.TextStyle[i].YAlign = draw.YBottom
		lbl.TextStyle[i].Font.Size = vg.Points(11)
	}
	thr.Add(lbl)
	thr.NominalX(tl...)
	thr.X.Tick.Label.Font.Size = vg.Points(11)
	thr.Y.Tick.Label.Font.Size = vg.Points(11)

	img := vgimg.NewWith(vgimg.UseWH(17*vg.Inch, 6.5*vg.Inch), vgimg.UseDPI(96))
	dc := draw.New(img)
	tiles := draw.Tiles{Rows: 1, Cols: 2, PadX: vg.Inch / 2, PadTop: vg.Inch / 8, PadBottom: vg.Inch / 8, PadLeft: vg.Inch / 8, PadRight: vg.Inch / 4}
	cs := plot.Align([][]*plot.Plot{{lat, thr}}, tiles, dc)
	lat.Draw(cs[0][0])
	thr.Draw(cs[0][1])
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

// shortCPU trims a CPU model name for the chart title.
func shortCPU(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 40 {
		s = s[:40] + "…"
	}
	return s
}
