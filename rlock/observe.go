package rlock

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/metric/noop"

	"github.com/goredisson/goredisson/renewal"
)

// meterName is the instrumentation scope of rlock's metrics.
const meterName = "github.com/goredisson/goredisson/rlock"

// observer reports what a Client does: logs through Options.Logger and metrics through
// Options.MeterProvider. Hold times and the long-hold warning need the start of each
// hold, kept per (name, field) from the first acquisition to the final release.
type observer struct {
	log         *slog.Logger
	holdWarning time.Duration

	acquire metric.Float64Histogram
	hold    metric.Float64Histogram
	lost    metric.Int64Counter
	reg     metric.Registration

	mu    sync.Mutex
	holds map[holdKey]*holdStart
	swept int // len(holds) after the last sweep of expired leases
}

type holdKey struct{ name, field string }

type holdStart struct {
	at      time.Time
	expires time.Time // zero for watchdog holds
	warn    *time.Timer
}

var discard = slog.New(slog.DiscardHandler)

func newObserver(opts Options, wheel func() renewal.Stats) (*observer, error) {
	o := &observer{log: opts.Logger, holdWarning: opts.HoldWarning, holds: make(map[holdKey]*holdStart)}
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
		metric.WithDescription("Holds found lost: renewal saw the field gone or could not renew for a lease.")); err != nil {
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
		s := wheel()
		obs.ObserveInt64(renewals, int64(s.Renewed))
		obs.ObserveInt64(failures, int64(s.Failed))
		obs.ObserveInt64(held, int64(o.count()))
		return nil
	}, renewals, failures, held)
	return o, err
}

// acquired records an acquire call's outcome and, for a successful one, the start of the
// hold when this owner did not hold the lock yet.
func (o *observer) acquired(ctx context.Context, name, field string, start time.Time, lease time.Duration, err error) {
	outcome := "acquired"
	switch {
	case err == nil:
	case err == ErrLocked:
		outcome = "locked"
	case ctx.Err() != nil:
		outcome = "canceled"
	default:
		outcome = "error"
	}
	now := time.Now()
	o.acquire.Record(ctx, now.Sub(start).Seconds(), metric.WithAttributes(attribute.String("outcome", outcome)))
	if err != nil {
		return
	}
	k := holdKey{name, field}
	o.mu.Lock()
	defer o.mu.Unlock()
	h := o.holds[k]
	if h == nil {
		h = &holdStart{at: now}
		if o.holdWarning > 0 {
			h.warn = time.AfterFunc(o.holdWarning, func() {
				o.log.Warn("rlock: lock held longer than the warning threshold",
					"lock", name, "holder", field, "threshold", o.holdWarning)
			})
		}
		o.holds[k] = h
	}
	h.expires = time.Time{}
	if lease > 0 {
		h.expires = now.Add(lease)
	}
	o.sweepLocked(now)
}

// released ends the hold of field on name; viaUnlock tells whether the owner released it.
func (o *observer) released(name, field string, viaUnlock bool) {
	k := holdKey{name, field}
	o.mu.Lock()
	h := o.holds[k]
	delete(o.holds, k)
	o.mu.Unlock()
	if h == nil {
		return
	}
	if h.warn != nil {
		h.warn.Stop()
	}
	if viaUnlock {
		o.hold.Record(context.Background(), time.Since(h.at).Seconds())
	}
}

// lostHold reports a hold found lost.
func (o *observer) lostHold(name, field string, cause error) {
	o.lost.Add(context.Background(), 1)
	o.log.Warn("rlock: lock lost", "lock", name, "holder", field, "cause", cause)
	o.released(name, field, false)
}

// forgetName ends every hold of name (force-unlock).
func (o *observer) forgetName(name string) {
	o.mu.Lock()
	var ended []*holdStart
	for k, h := range o.holds {
		if k.name == name {
			ended = append(ended, h)
			delete(o.holds, k)
		}
	}
	o.mu.Unlock()
	for _, h := range ended {
		if h.warn != nil {
			h.warn.Stop()
		}
	}
}

// sweepLocked drops holds whose explicit lease has run out without an Unlock, each time the
// table has doubled since the last sweep, so it stays proportional to the live holds.
func (o *observer) sweepLocked(now time.Time) {
	if len(o.holds) < 2*o.swept+64 {
		return
	}
	for k, h := range o.holds {
		if !h.expires.IsZero() && now.After(h.expires) {
			if h.warn != nil {
				h.warn.Stop()
			}
			delete(o.holds, k)
		}
	}
	o.swept = len(o.holds)
}

func (o *observer) count() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return len(o.holds)
}

// close stops the long-hold timers and unregisters the metric callback.
func (o *observer) close() {
	o.mu.Lock()
	for k, h := range o.holds {
		if h.warn != nil {
			h.warn.Stop()
		}
		delete(o.holds, k)
	}
	o.mu.Unlock()
	o.reg.Unregister()
}
