package main

import (
	"testing"
	"time"

	"github.com/spf13/pflag"
)

func TestBuyerArgsGiveBackTheOptions(t *testing.T) {
	want := buyerOpts{product: "p-7", goroutines: 9, think: 37 * time.Millisecond, work: 1500 * time.Microsecond,
		period: 2 * time.Second, resend: 0.25, unsafe: true}
	for _, o := range []buyerOpts{want, {}} {
		fs := pflag.NewFlagSet("worker", pflag.ContinueOnError)
		var got buyerOpts
		got.register(fs)
		if err := fs.Parse(o.args()); err != nil {
			t.Fatalf("parse %q: %v", o.args(), err)
		}
		if got != o {
			t.Errorf("args %q parsed to %+v, want %+v", o.args(), got, o)
		}
	}
}
