package rlockotel

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/goredisson/goredisson/internal/keys"
	"github.com/goredisson/goredisson/internal/redistest"
	"github.com/goredisson/goredisson/rlock"
)

// ended returns the spans named name that rec recorded as ended.
func ended(rec *tracetest.SpanRecorder, name string) []sdktrace.ReadOnlySpan {
	var out []sdktrace.ReadOnlySpan
	for _, s := range rec.Ended() {
		if s.Name() == name {
			out = append(out, s)
		}
	}
	return out
}

// only returns the one span named name that rec recorded as ended.
func only(t *testing.T, rec *tracetest.SpanRecorder, name string) sdktrace.ReadOnlySpan {
	t.Helper()
	spans := ended(rec, name)
	require.Len(t, spans, 1, "spans named %s", name)
	return spans[0]
}

// attrs returns the attributes of s by key.
func attrs(s sdktrace.ReadOnlySpan) map[attribute.Key]attribute.Value {
	out := map[attribute.Key]attribute.Value{}
	for _, kv := range s.Attributes() {
		out[kv.Key] = kv.Value
	}
	return out
}

// events returns the names of s's events.
func events(s sdktrace.ReadOnlySpan) []string {
	var out []string
	for _, e := range s.Events() {
		out = append(out, e.Name)
	}
	return out
}

// request starts the span of a request that locks, as a service's handler has one.
func request(ctx context.Context, tp trace.TracerProvider) (context.Context, trace.Span) {
	return tp.Tracer("test").Start(ctx, "request")
}

// evalCalls counts the scripts the server ran.
func evalCalls(t *testing.T, f *fixture) int64 {
	rc := f.srv.Client(t)
	return redistest.Calls(t, rc, "evalsha") + redistest.Calls(t, rc, "eval")
}

func TestTraceContendedAcquire(t *testing.T) {
	tp, rec := newTracing(t)
	f := newFixture(t, Config{TracerProvider: tp}, rlock.Options{})
	holder := rlock.NewOwner(f.ctx)
	require.NoError(t, f.other.NewLock(f.name).Lock(holder))

	ctx, req := request(f.ctx, tp)
	base := evalCalls(t, f)
	done := make(chan error, 1)
	go func() { done <- f.c.NewLock(f.name).Lock(rlock.NewOwner(ctx)) }()
	// A waiter: subscribed, and its try after subscribing made (two scripts run).
	rc := f.srv.Client(t)
	require.True(t, redistest.Poll(10*time.Second, 5*time.Millisecond, func() bool {
		return redistest.NumSub(t, rc, keys.LockChannel(f.name)) == 1 && evalCalls(t, f) >= base+2
	}), "the acquire waits")
	require.NoError(t, f.other.NewLock(f.name).Unlock(holder))
	require.NoError(t, <-done)
	req.End()

	s := only(t, rec, "rlock.Lock")
	assert.Equal(t, req.SpanContext().SpanID(), s.Parent().SpanID(), "under the request's span")
	assert.Equal(t, trace.SpanKindClient, s.SpanKind())
	a := attrs(s)
	assert.Equal(t, "acquired", a["goredisson.outcome"].AsString())
	assert.Equal(t, "redis", a["db.system.name"].AsString())
	assert.Equal(t, "127.0.0.1", a["server.address"].AsString())
	assert.Equal(t, f.name, a["goredisson.lock.name"].AsString())
	assert.Equal(t, "lock", a["goredisson.lock.type"].AsString())
	assert.Equal(t, f.c.ID(), a["goredisson.client.id"].AsString())
	assert.Equal(t, "watchdog", a["goredisson.lock.lease.kind"].AsString())
	assert.Equal(t, 30.0, a["goredisson.lock.lease"].AsFloat64())
	assert.GreaterOrEqual(t, a["goredisson.attempts"].AsInt64(), int64(3), "before, after subscribing, after the wake-up")
	assert.GreaterOrEqual(t, a["goredisson.wakeups"].AsInt64(), int64(1))
	assert.Positive(t, a["goredisson.waited"].AsFloat64(), "time asleep")
	assert.Contains(t, events(s), "rlock.woken")
	assert.NotContains(t, a, attribute.Key("goredisson.lock.wait"), "Lock has no bound")
	assert.NotContains(t, a, attribute.Key("error.type"))
	assert.Equal(t, codes.Unset, s.Status().Code)

	u := ended(rec, "rlock.Unlock")
	assert.Empty(t, u, "the other Client has no Observer")
}

func TestTraceTryLockRefused(t *testing.T) {
	tp, rec := newTracing(t)
	f := newFixture(t, Config{TracerProvider: tp}, rlock.Options{})
	holder := rlock.NewOwner(f.ctx)
	require.NoError(t, f.other.NewLock(f.name).Lock(holder))
	defer f.other.NewLock(f.name).Unlock(holder)

	ctx, req := request(f.ctx, tp)
	err := f.c.NewLock(f.name).TryLock(rlock.NewOwner(ctx), 50*time.Millisecond, 10*time.Second)
	require.ErrorIs(t, err, rlock.ErrLocked)
	req.End()

	s := only(t, rec, "rlock.TryLock")
	assert.Equal(t, req.SpanContext().SpanID(), s.Parent().SpanID())
	a := attrs(s)
	assert.Equal(t, "refused", a["goredisson.outcome"].AsString())
	assert.Equal(t, "locked", a["error.type"].AsString())
	assert.Equal(t, 0.05, a["goredisson.lock.wait"].AsFloat64())
	assert.Equal(t, "explicit", a["goredisson.lock.lease.kind"].AsString())
	assert.Equal(t, 10.0, a["goredisson.lock.lease"].AsFloat64())
	assert.GreaterOrEqual(t, a["goredisson.attempts"].AsInt64(), int64(2))
	assert.Equal(t, int64(0), a["goredisson.wakeups"].AsInt64(), "nobody released it")
	assert.Positive(t, a["goredisson.waited"].AsFloat64())
	assert.Equal(t, codes.Unset, s.Status().Code, "a refusal is an outcome, not a failure")
}

func TestTraceLostHold(t *testing.T) {
	tp, rec := newTracing(t)
	f := newFixture(t, Config{TracerProvider: tp}, rlock.Options{WatchdogTimeout: 300 * time.Millisecond})
	ctx, req := request(f.ctx, tp)
	defer req.End()
	owner := rlock.NewOwner(ctx)
	l := f.c.NewLock(f.name)
	require.NoError(t, l.Lock(owner))

	ok, err := f.other.NewLock(f.name).ForceUnlock(f.ctx)
	require.NoError(t, err)
	require.True(t, ok)

	live := req.(sdktrace.ReadOnlySpan) // the request goes on: its span records
	require.Eventually(t, func() bool {
		for _, e := range live.Events() {
			if e.Name == "rlock.hold.lost" {
				return true
			}
		}
		return false
	}, 5*time.Second, 10*time.Millisecond, "the watchdog finds the hold gone")
	var cause, lock string
	for _, e := range live.Events() {
		for _, kv := range e.Attributes {
			switch kv.Key {
			case "goredisson.lost.cause":
				cause = kv.Value.AsString()
			case "goredisson.lock.name":
				lock = kv.Value.AsString()
			}
		}
	}
	assert.Equal(t, "removed", cause)
	assert.Equal(t, f.name, lock)

	assert.ErrorIs(t, l.Unlock(owner), rlock.ErrNotHeld)
	u := only(t, rec, "rlock.Unlock")
	assert.Equal(t, "error", attrs(u)["goredisson.outcome"].AsString())
	assert.Equal(t, "not_held", attrs(u)["error.type"].AsString())
	assert.Equal(t, codes.Error, u.Status().Code)
}

func TestTraceMultiLock(t *testing.T) {
	tp, rec := newTracing(t)
	f := newFixture(t, Config{TracerProvider: tp}, rlock.Options{})
	m, err := rlock.NewMultiLock(f.c.NewLock(f.name+":a"), f.c.NewLock(f.name+":b"))
	require.NoError(t, err)
	owner := rlock.NewOwner(f.ctx)
	require.NoError(t, m.TryLock(owner, time.Second, 0))
	require.NoError(t, m.Unlock(owner))

	g := only(t, rec, "rlock.MultiLock.TryLock")
	assert.Equal(t, trace.SpanKindInternal, g.SpanKind())
	a := attrs(g)
	assert.Equal(t, "acquired", a["goredisson.outcome"].AsString())
	assert.Equal(t, int64(2), a["goredisson.group.granted"].AsInt64())
	assert.Len(t, a["goredisson.group.members"].AsStringSlice(), 2)
	members := ended(rec, "rlock.TryLock")
	require.Len(t, members, 2, "one span per member acquire")
	for _, s := range members {
		assert.Equal(t, g.SpanContext().SpanID(), s.Parent().SpanID(), "under the group's span")
	}
	assert.Equal(t, "released", attrs(only(t, rec, "rlock.MultiLock.Unlock"))["goredisson.outcome"].AsString())
}
