package main

import (
	"time"

	"github.com/spf13/pflag"
)

// buyerOpts are the demo's settings that every worker process needs: `goredisson demo`
// takes them as flags, and passes them on to each `demo-worker` as the same flags.
type buyerOpts struct {
	product    string
	goroutines int
	think      time.Duration
	work       time.Duration
	period     time.Duration
	resend     float64
	unsafe     bool
}

// register defines the buyer flags on fs, bound to o, and sets o to their defaults.
func (o *buyerOpts) register(fs *pflag.FlagSet) {
	fs.IntVar(&o.goroutines, "goroutines", 4, "buyer goroutines per process")
	fs.StringVar(&o.product, "product", "42", "product id P: the lock is lock:stock:P")
	fs.DurationVar(&o.think, "think", 100*time.Millisecond, "mean pause of a buyer between two purchases (randomized x0.5-1.5)")
	fs.DurationVar(&o.work, "work", 2*time.Millisecond, "time a purchase spends under the lock")
	fs.DurationVar(&o.period, "report-every", time.Second, "period of the scheduled report (one run per period)")
	fs.Float64Var(&o.resend, "resend", 0.1, "share of orders sent twice with the same id (0-1)")
	fs.BoolVar(&o.unsafe, "unsafe", false, "buy WITHOUT the lock, to see the oversell it prevents")
}

// args returns o as command-line flags, one "--name=value" per flag that register
// defines, in a fixed order: parsed by a flag set that register made, they give back o.
func (o buyerOpts) args() []string {
	fs := pflag.NewFlagSet("buyer", pflag.ContinueOnError)
	var bound buyerOpts
	bound.register(fs)
	bound = o // the flags read their values through pointers into bound
	var args []string
	fs.VisitAll(func(f *pflag.Flag) {
		args = append(args, "--"+f.Name+"="+f.Value.String())
	})
	return args
}
