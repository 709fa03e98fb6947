package rlock

import (
	"context"
	"errors"
	"log/slog"
	"time"
)

// observer reports what a Client does: logs through Options.Logger, and operations and hold
// ends to Options.Observer (ext), when there is one. It keeps no state of its own: hold
// starts and counts are in the hold registry, renewal counts in the wheel.
type observer struct {
	log         *slog.Logger
	holdWarning time.Duration
	ext         Observer // nil: no observer
	server      string   // the Redis address operations report (Op.Server)
}

var discard = slog.New(slog.DiscardHandler)

func newObserver(opts Options, server string) *observer {
	o := &observer{log: opts.Logger, holdWarning: opts.HoldWarning, ext: opts.Observer, server: server}
	if o.log == nil {
		o.log = discard
	}
	return o
}

// on reports whether an Observer receives the operations.
func (o *observer) on() bool { return o.ext != nil }

// opRun is an operation in progress, for the Observer: its events are counted here and
// reported at its end. A nil *opRun (no Observer) ignores everything.
type opRun struct {
	obs      OpObserver
	caller   context.Context // the caller's ctx, that holds taken by the operation keep
	attempts int
	wakeUps  int
	waited   time.Duration
	token    int64
	granted  int
	existed  bool
}

// opKey is the context key of the running operation.
type opKey struct{}

// begin starts op for the Observer, which must be set (on). It returns the ctx the
// operation runs under, which carries the run (opFrom), and the run; nil when the Observer
// ignores the operation.
func (o *observer) begin(ctx context.Context, op Op) (context.Context, *opRun) {
	octx, obs := o.ext.Start(ctx, op)
	if obs == nil {
		return ctx, nil
	}
	r := &opRun{obs: obs, caller: ctx}
	return context.WithValue(octx, opKey{}, r), r
}

// opFrom returns the operation that ctx runs, or nil.
func opFrom(ctx context.Context) *opRun {
	r, _ := ctx.Value(opKey{}).(*opRun)
	return r
}

// attempt counts one run of an acquire script.
func (r *opRun) attempt() {
	if r != nil {
		r.attempts++
	}
}

// slept counts a wait for a release that lasted d; woken tells that a message ended it.
func (r *opRun) slept(d time.Duration, woken bool) {
	if r == nil {
		return
	}
	r.waited += d
	if woken {
		r.wakeUps++
		r.obs.WokenUp()
	}
}

// end reports the operation's end with err; ctx is the caller's, whose end makes the
// outcome OutcomeCanceled.
func (r *opRun) end(ctx context.Context, err error) {
	if r == nil {
		return
	}
	r.obs.End(OpEnd{Outcome: outcomeOf(ctx, err), Err: err, Attempts: r.attempts, WakeUps: r.wakeUps,
		Waited: r.waited, Token: r.token, Granted: r.granted, Existed: r.existed})
}

// holdCtx returns the ctx a hold taken under ctx keeps for the Observer: the caller's of
// the outermost operation ctx runs (a group's, for its members), or ctx itself.
func holdCtx(ctx context.Context) context.Context {
	for r := opFrom(ctx); r != nil; r = opFrom(ctx) {
		ctx = r.caller
	}
	return ctx
}

// warnAfter returns the long-hold warning timer of a new hold, or nil when none is set.
func (o *observer) warnAfter(name, field string) *time.Timer {
	if o.holdWarning <= 0 {
		return nil
	}
	return time.AfterFunc(o.holdWarning, func() {
		o.log.Warn("rlock: lock held longer than the warning threshold",
			"lock", name, "holder", field, "threshold", o.holdWarning)
	})
}

// holdEnded reports the end of h: to the Observer, and as a warning when it was lost.
func (o *observer) holdEnded(h *hold, cause error) {
	if o.ext != nil {
		ctx := h.ctx
		if ctx == nil {
			ctx = context.Background()
		}
		o.ext.HoldEnded(ctx, HoldEnd{Lock: h.name, Owner: h.field, Held: time.Since(h.start), Cause: cause})
	}
	if errors.Is(cause, ErrReleased) || errors.Is(cause, ErrClosed) {
		return // Close ends every hold on purpose
	}
	o.log.Warn("rlock: lock lost", "lock", h.name, "holder", h.field, "cause", cause)
}

// lockTypes names each lock kind for Op.Type.
var lockTypes = [...]string{
	reentrant:    "lock",
	fenced:       "fenced",
	nonReentrant: "nonreentrant",
	spin:         "spin",
	fair:         "fair",
	readLock:     "read",
	writeLock:    "write",
}

// op describes an operation of kind on l, named "rlock." + call, for ctx's owner.
func (l *Lock) op(ctx context.Context, kind OpKind, call string) Op {
	o, _ := OwnerFrom(ctx)
	return Op{Kind: kind, Name: "rlock." + call, Lock: l.name, Type: lockTypes[l.kind], ClientID: l.c.id,
		Server: l.c.obs.server, Owner: o, Wait: -1}
}

// acquireOp describes an acquire of l.
func (l *Lock) acquireOp(ctx context.Context, call string, wait waitBound, lease time.Duration) Op {
	op := l.op(ctx, OpAcquire, call)
	if wait.limited {
		op.Wait = wait.d
	}
	op.Lease, op.Watchdog = lease, l.c.opts.WatchdogTimeout
	return op
}

// observed runs fn, the operation of kind on g named for the group's type and call, under
// its first member's Client's Observer, with the members granted when it acquired the group.
// wait and lease are an acquire's.
func (g *group) observed(ctx context.Context, kind OpKind, call string, wait waitBound, lease time.Duration,
	fn func(context.Context) error) error {
	first := g.members[0]
	if !first.c.obs.on() {
		return fn(ctx)
	}
	o, _ := OwnerFrom(ctx)
	op := Op{Kind: kind, Name: "rlock.MultiLock." + call, Lock: g.name, Type: "multilock", ClientID: first.c.id,
		Owner: o, Wait: -1, Members: g.labels}
	if g.redlock {
		op.Name, op.Type = "rlock.RedLock."+call, "redlock"
	}
	if kind == OpGroupAcquire {
		if wait.limited {
			op.Wait = wait.d
		}
		op.Lease, op.Watchdog = lease, first.c.opts.WatchdogTimeout
	}
	octx, run := first.c.obs.begin(ctx, op)
	err := fn(octx)
	if run != nil && err == nil && kind == OpGroupAcquire {
		run.granted = len(g.heldBy(o))
	}
	run.end(ctx, err)
	return err
}
