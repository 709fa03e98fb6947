package rlock

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/metric/noop"

	"github.com/goredisson/goredisson/renewal"
)

// meterName is the instrumentation scope of rlock's metrics.
const meterName = "github.com/goredisson/goredisson/rlock"

// observer reports what a Client does: logs through Options.Logger and metrics through
// Options.MeterProvider. It keeps no state of its own: hold starts and counts are in the
// hold registry, renewal counts in the wheel.
type observer struct {
	log         *slog.Logger
	holdWarning time.Duration

	acquire metric.Float64Histogram
	hold    metric.Float64Histogram
	lost    metric.Int64Counter
	reg     metric.Registration
}

var discard = slog.New(slog.DiscardHandler)

// newObserver creates the instruments and registers the callback that reads the wheel's
// and the registry's counts, so both must exist before it is called.
func newObserver(opts Options, wheel *renewal.Wheel, hs *holds) (*observer, error) {
	o := &observer{log: opts.Logger, holdWarning: opts.HoldWarning}
	if o.log == nil {
		o.log = discard
	}
	mp := opts.MeterProvider
	if mp == nil {
		mp = noop.NewMeterProvider()
	}
	m := mp.Meter(meterName)
	var err error
	if o.acquire, err = m.Float64Histogram("goredisson.lock.acquire.duration", metric.WithUnit("s"),
		metric.WithDescription("Time from an acquire call to its return, by outcome; waits included.")); err != nil {
		return nil, err
	}
	if o.hold, err = m.Float64Histogram("goredisson.lock.hold.duration", metric.WithUnit("s"),
		metric.WithDescription("Time from an owner's first acquisition of a lock to its final release.")); err != nil {
		return nil, err
	}
	if o.lost, err = m.Int64Counter("goredisson.lock.lost",
		metric.WithDescription("Holds lost: lease not renewed in time, removed by someone else, force-unlocked or client closed.")); err != nil {
		return nil, err
	}
	renewals, err := m.Int64ObservableCounter("goredisson.lock.renewals",
		metric.WithDescription("Locks whose lease the watchdog extended."))
	if err != nil {
		return nil, err
	}
	failures, err := m.Int64ObservableCounter("goredisson.lock.renewal.failures",
		metric.WithDescription("Watchdog renewal calls that failed (retried at the next tick)."))
	if err != nil {
		return nil, err
	}
	held, err := m.Int64ObservableUpDownCounter("goredisson.lock.held",
		metric.WithDescription("Holds of this client now: (lock, owner) pairs acquired and not released."))
	if err != nil {
		return nil, err
	}
	o.reg, err = m.RegisterCallback(func(_ context.Context, obs metric.Observer) error {
		s := wheel.Stats()
		obs.ObserveInt64(renewals, int64(s.Renewed))
		obs.ObserveInt64(failures, int64(s.Failed))
		obs.ObserveInt64(held, int64(hs.count()))
		return nil
	}, renewals, failures, held)
	return o, err
}

// acquireDone records an acquire call's outcome.
func (o *observer) acquireDone(ctx context.Context, start time.Time, err error) {
	outcome := outcomeAcquired
	switch {
	case err == nil:
	case errors.Is(err, ErrLocked):
		outcome = outcomeLocked
	case ctx.Err() != nil:
		outcome = outcomeCanceled
	default:
		outcome = outcomeError
	}
	o.acquire.Record(ctx, time.Since(start).Seconds(), outcomes[outcome]...)
}

// The outcomes of an acquire call, as the attribute "outcome" of its duration.
const (
	outcomeAcquired = iota
	outcomeLocked
	outcomeCanceled
	outcomeError
)

// outcomes are the options of Record for each outcome, made once: made per call, they
// would allocate on every acquire, with metrics off too.
var outcomes = func() (opts [4][]metric.RecordOption) {
	for i, v := range []string{"acquired", "locked", "canceled", "error"} {
		opts[i] = []metric.RecordOption{metric.WithAttributeSet(attribute.NewSet(attribute.String("outcome", v)))}
	}
	return opts
}()

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

// holdEnded records the end of h: its duration when its owner released it, a loss otherwise.
func (o *observer) holdEnded(h *hold, cause error) {
	if errors.Is(cause, ErrReleased) {
		o.hold.Record(context.Background(), time.Since(h.start).Seconds())
		return
	}
	if errors.Is(cause, ErrClosed) {
		return // Close ends every hold on purpose
	}
	o.lost.Add(context.Background(), 1)
	o.log.Warn("rlock: lock lost", "lock", h.name, "holder", h.field, "cause", cause)
}

// close unregisters the metric callback.
func (o *observer) close() { o.reg.Unregister() }
