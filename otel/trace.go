package rlockotel

import (
	"context"
	"errors"
	"net"
	"strconv"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/goredisson/goredisson/rlock"
)

// Span attribute keys of this package (the semantic conventions' are in semconv).
const (
	keyLock      = attribute.Key("goredisson.lock.name")
	keyType      = attribute.Key("goredisson.lock.type")
	keyOwner     = attribute.Key("goredisson.owner.id")
	keyClient    = attribute.Key("goredisson.client.id")
	keyWait      = attribute.Key("goredisson.lock.wait")
	keyLeaseKind = attribute.Key("goredisson.lock.lease.kind")
	keyLease     = attribute.Key("goredisson.lock.lease")
	keyMembers   = attribute.Key("goredisson.group.members")
	keyOutcome   = attribute.Key("goredisson.outcome")
	keyAttempts  = attribute.Key("goredisson.attempts")
	keyWakeUps   = attribute.Key("goredisson.wakeups")
	keyWaited    = attribute.Key("goredisson.waited")
	keyToken     = attribute.Key("goredisson.fencing.token")
	keyGranted   = attribute.Key("goredisson.group.granted")
	keyCause     = attribute.Key("goredisson.lost.cause")
)

// Span events.
const (
	eventWoken = "rlock.woken"
	eventLost  = "rlock.hold.lost"
)

// spanKind is client for an operation on one lock, which is a few calls to one Redis
// server, and internal for a group's, whose members' spans are the calls.
func spanKind(k rlock.OpKind) trace.SpanKind {
	if k == rlock.OpGroupAcquire || k == rlock.OpGroupRelease {
		return trace.SpanKindInternal
	}
	return trace.SpanKindClient
}

// startAttrs are the attributes of op's span known at its start.
func startAttrs(op rlock.Op) []attribute.KeyValue {
	attrs := []attribute.KeyValue{semconv.DBSystemNameRedis, keyLock.String(op.Lock), keyType.String(op.Type),
		keyClient.String(op.ClientID)}
	if host, port, err := net.SplitHostPort(op.Server); err == nil {
		attrs = append(attrs, semconv.ServerAddress(host))
		if p, err := strconv.Atoi(port); err == nil {
			attrs = append(attrs, semconv.ServerPort(p))
		}
	}
	if op.Owner != 0 {
		attrs = append(attrs, keyOwner.Int64(int64(op.Owner)))
	}
	if op.Kind == rlock.OpAcquire || op.Kind == rlock.OpGroupAcquire {
		if op.Wait >= 0 {
			attrs = append(attrs, keyWait.Float64(op.Wait.Seconds()))
		}
		if op.Lease == 0 {
			attrs = append(attrs, keyLeaseKind.String("watchdog"), keyLease.Float64(op.Watchdog.Seconds()))
		} else {
			attrs = append(attrs, keyLeaseKind.String("explicit"), keyLease.Float64(op.Lease.Seconds()))
		}
	}
	if len(op.Members) > 0 {
		attrs = append(attrs, keyMembers.StringSlice(op.Members))
	}
	return attrs
}

// endSpan sets what op did on its span, and ends it.
func endSpan(span trace.Span, op rlock.Op, e rlock.OpEnd) {
	attrs := []attribute.KeyValue{keyOutcome.String(outcomeName(op, e))}
	switch op.Kind {
	case rlock.OpAcquire:
		attrs = append(attrs, keyAttempts.Int(e.Attempts), keyWakeUps.Int(e.WakeUps), keyWaited.Float64(e.Waited.Seconds()))
		if e.Token != 0 {
			attrs = append(attrs, keyToken.Int64(e.Token))
		}
	case rlock.OpGroupAcquire:
		attrs = append(attrs, keyGranted.Int(e.Granted))
	}
	if e.Err != nil {
		attrs = append(attrs, semconv.ErrorTypeKey.String(errorType(e.Err)))
	}
	span.SetAttributes(attrs...)
	if e.Outcome == rlock.OutcomeError {
		span.SetStatus(codes.Error, e.Err.Error())
	}
	span.End()
}

// outcomeName is the goredisson.outcome of an operation.
func outcomeName(op rlock.Op, e rlock.OpEnd) string {
	switch e.Outcome {
	case rlock.OutcomeRefused:
		return "refused"
	case rlock.OutcomeCanceled:
		return "canceled"
	case rlock.OutcomeError:
		return "error"
	}
	switch op.Kind {
	case rlock.OpRelease, rlock.OpGroupRelease:
		return "released"
	case rlock.OpForceUnlock:
		if e.Existed {
			return "deleted"
		}
		return "absent"
	}
	return "acquired"
}

// errorTypes name the errors an operation or a lost hold may end with, for error.type and
// goredisson.lost.cause, most specific first.
var errorTypes = []struct {
	err  error
	name string
}{
	{rlock.ErrLocked, "locked"},
	{rlock.ErrNotHeld, "not_held"},
	{rlock.ErrReentry, "reentry"},
	{rlock.ErrNoQuorum, "no_quorum"},
	{rlock.ErrNotReplicated, "not_replicated"},
	{rlock.ErrNoPermission, "no_permission"},
	{rlock.ErrLeaseExpired, "lease_expired"},
	{rlock.ErrRemoved, "removed"},
	{rlock.ErrForceUnlocked, "force_unlocked"},
	{rlock.ErrClosed, "closed"},
	{context.Canceled, "canceled"},
	{context.DeadlineExceeded, "deadline_exceeded"},
}

// errorType names err by the first of errorTypes it matches; "_OTHER" when none.
func errorType(err error) string {
	for _, t := range errorTypes {
		if errors.Is(err, t.err) {
			return t.name
		}
	}
	return semconv.ErrorTypeOther.Value.AsString()
}

// lostEvent adds the event of a lost hold to the span current in ctx (the hold's first
// acquisition's caller's), if it still records.
func lostEvent(ctx context.Context, h rlock.HoldEnd) {
	span := trace.SpanFromContext(ctx)
	if !span.IsRecording() {
		return
	}
	span.AddEvent(eventLost, trace.WithAttributes(keyLock.String(h.Lock), keyCause.String(errorType(h.Cause))))
}
