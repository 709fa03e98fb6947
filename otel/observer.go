package rlockotel

import (
	"context"
	"time"

	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/goredisson/goredisson/rlock"
)

// scope is the instrumentation scope of the metrics and spans.
const scope = "github.com/goredisson/goredisson/rlock"

// Config chooses where an Observer sends what it sees.
type Config struct {
	// MeterProvider receives the metrics. Nil means no metrics.
	MeterProvider metric.MeterProvider
	// TracerProvider receives a span per lock operation. Nil means no spans.
	TracerProvider trace.TracerProvider
}

// Observer is an rlock.Observer that reports to OpenTelemetry. Pass it as
// rlock.Options.Observer; one Observer may serve any number of Clients. It is safe for
// concurrent use.
type Observer struct {
	m      *metrics
	tracer trace.Tracer // nil: no spans
}

var _ rlock.Observer = (*Observer)(nil)

// New returns an Observer that sends to cfg's providers. It returns the MeterProvider's error
// when an instrument cannot be created.
func New(cfg Config) (*Observer, error) {
	m, err := newMetrics(cfg.MeterProvider)
	if err != nil {
		return nil, err
	}
	o := &Observer{m: m}
	if cfg.TracerProvider != nil {
		o.tracer = cfg.TracerProvider.Tracer(scope)
	}
	return o, nil
}

// Attach counts c's holds and renewals in the metrics from now on.
func (o *Observer) Attach(c *rlock.Client) error {
	o.m.attach(c)
	return nil
}

// Detach stops reading c's counts; its renewals stay counted.
func (o *Observer) Detach(c *rlock.Client) { o.m.detach(c) }

// Start starts the operation's span, when there is a TracerProvider, and its timing for the
// acquire duration.
func (o *Observer) Start(ctx context.Context, op rlock.Op) (context.Context, rlock.OpObserver) {
	r := &opRecord{o: o, op: op, start: time.Now()}
	if o.tracer != nil {
		ctx, r.span = o.tracer.Start(ctx, op.Name, trace.WithSpanKind(spanKind(op.Kind)), trace.WithAttributes(startAttrs(op)...))
	} else if op.Kind != rlock.OpAcquire {
		return ctx, nil // nothing to record
	}
	r.ctx = ctx
	return ctx, r
}

// HoldEnded records a released hold's duration, or a lost one: counted, and an event on the
// span that was current when it was acquired, if that span still records.
func (o *Observer) HoldEnded(ctx context.Context, h rlock.HoldEnd) {
	if o.m.holdEnded(ctx, h) {
		lostEvent(ctx, h)
	}
}

// opRecord is one operation in progress.
type opRecord struct {
	o     *Observer
	ctx   context.Context // the operation's, with its span
	op    rlock.Op
	start time.Time
	span  trace.Span // nil without a TracerProvider
}

// WokenUp adds the event rlock.woken to the span.
func (r *opRecord) WokenUp() {
	if r.span != nil {
		r.span.AddEvent(eventWoken)
	}
}

// End records the acquire duration and ends the span.
func (r *opRecord) End(e rlock.OpEnd) {
	if r.op.Kind == rlock.OpAcquire {
		r.o.m.acquired(r.ctx, time.Since(r.start), e.Outcome)
	}
	if r.span != nil {
		endSpan(r.span, r.op, e)
	}
}
