package main

import (
	"fmt"
	"io"
	"os"
	"time"

	"github.com/schollz/progressbar/v3"
)

// progress shows units sold: a bar on a terminal, a line per quarter elsewhere (logs, CI).
type progress struct {
	bar     *progressbar.ProgressBar // nil when not a terminal
	w       io.Writer
	max     int64
	quarter int64 // last quarter printed, off a terminal
	off     bool
}

func newProgress(w io.Writer, max int64, off bool) *progress {
	p := &progress{w: w, max: max, off: off}
	if off || !isTerminal(w) {
		return p
	}
	p.bar = progressbar.NewOptions64(max,
		progressbar.OptionSetWriter(w),
		progressbar.OptionSetDescription("units sold"),
		progressbar.OptionShowCount(),
		progressbar.OptionSetWidth(40),
		progressbar.OptionThrottle(50*time.Millisecond),
		progressbar.OptionShowElapsedTimeOnFinish(),
		progressbar.OptionSetPredictTime(false),
		progressbar.OptionOnCompletion(func() { fmt.Fprintln(w) }),
		progressbar.OptionSetRenderBlankState(true),
	)
	return p
}

func (p *progress) set(n int64) {
	switch {
	case p.off:
	case p.bar != nil:
		_ = p.bar.Set64(min(n, p.max))
	default:
		for q := p.quarter + 1; q <= 4 && n*4 >= q*p.max; q++ {
			fmt.Fprintf(p.w, "units sold: %d/%d (%d%%)\n", q*p.max/4, p.max, q*25)
			p.quarter = q
		}
	}
}

// done ends the bar's line if the demo stopped before the bar was full.
func (p *progress) done() {
	if p.bar != nil && !p.bar.IsFinished() {
		_ = p.bar.Exit()
		fmt.Fprintln(p.w)
	}
}

// isTerminal reports whether w is a character device (a terminal), without a dependency.
func isTerminal(w io.Writer) bool {
	if lw, ok := w.(*lockedWriter); ok {
		w = lw.w
	}
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
