package rlockotel

import (
	"context"
	"errors"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/metric/noop"

	"github.com/goredisson/goredisson/rlock"
)

// metrics are the instruments, and the Clients whose counts they read.
type metrics struct {
	acquire metric.Float64Histogram
	hold    metric.Float64Histogram
	lost    metric.Int64Counter

	mu       sync.Mutex
	clients  map[*rlock.Client]bool
	detached rlock.Stats // the renewals of the Clients detached, so that the counters never go back
}

// newMetrics creates the instruments on mp (none when nil) and registers the callback that
// reads the Clients' counts.
func newMetrics(mp metric.MeterProvider) (*metrics, error) {
	if mp == nil {
		mp = noop.NewMeterProvider()
	}
	m := mp.Meter(scope)
	ms := &metrics{clients: map[*rlock.Client]bool{}}
	var err error
	if ms.acquire, err = m.Float64Histogram("goredisson.lock.acquire.duration", metric.WithUnit("s"),
		metric.WithDescription("Time from an acquire call to its return, by outcome; waits included.")); err != nil {
		return nil, err
	}
	if ms.hold, err = m.Float64Histogram("goredisson.lock.hold.duration", metric.WithUnit("s"),
		metric.WithDescription("Time from an owner's first acquisition of a lock to its final release.")); err != nil {
		return nil, err
	}
	if ms.lost, err = m.Int64Counter("goredisson.lock.lost",
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
	_, err = m.RegisterCallback(func(_ context.Context, obs metric.Observer) error {
		s := ms.stats()
		obs.ObserveInt64(renewals, int64(s.Renewals))
		obs.ObserveInt64(failures, int64(s.RenewalFailures))
		obs.ObserveInt64(held, int64(s.Held))
		return nil
	}, renewals, failures, held)
	if err != nil {
		return nil, err
	}
	return ms, nil
}

func (ms *metrics) attach(c *rlock.Client) {
	ms.mu.Lock()
	defer ms.mu.Unlock()
	ms.clients[c] = true
}

func (ms *metrics) detach(c *rlock.Client) {
	s := c.Stats()
	ms.mu.Lock()
	defer ms.mu.Unlock()
	if ms.clients[c] {
		delete(ms.clients, c)
		ms.detached.Renewals += s.Renewals
		ms.detached.RenewalFailures += s.RenewalFailures
	}
}

// stats sums the counts of the Clients attached and detached.
func (ms *metrics) stats() rlock.Stats {
	ms.mu.Lock()
	defer ms.mu.Unlock()
	sum := ms.detached
	for c := range ms.clients {
		s := c.Stats()
		sum.Held += s.Held
		sum.Renewals += s.Renewals
		sum.RenewalFailures += s.RenewalFailures
	}
	return sum
}

// acquireOutcomes are the options of Record for each outcome of an acquire, made once.
var acquireOutcomes = func() (opts [rlock.OutcomeError + 1][]metric.RecordOption) {
	for o, v := range map[rlock.Outcome]string{rlock.OutcomeDone: "acquired", rlock.OutcomeRefused: "locked",
		rlock.OutcomeCanceled: "canceled", rlock.OutcomeError: "error"} {
		opts[o] = []metric.RecordOption{metric.WithAttributeSet(attribute.NewSet(attribute.String("outcome", v)))}
	}
	return opts
}()

// acquired records an acquire call's duration and outcome.
func (ms *metrics) acquired(ctx context.Context, d time.Duration, o rlock.Outcome) {
	ms.acquire.Record(ctx, d.Seconds(), acquireOutcomes[o]...)
}

// holdEnded records a released hold's duration or a lost hold, and reports whether it was
// lost (not released, and not ended by Close).
func (ms *metrics) holdEnded(ctx context.Context, h rlock.HoldEnd) bool {
	switch {
	case errors.Is(h.Cause, rlock.ErrReleased):
		ms.hold.Record(ctx, h.Held.Seconds())
		return false
	case errors.Is(h.Cause, rlock.ErrClosed):
		return false // Close ends every hold on purpose
	}
	ms.lost.Add(ctx, 1)
	return true
}
