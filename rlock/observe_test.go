package rlock

import (
	"bytes"
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/goredisson/goredisson/internal/redistest"
)

// collect reads the metrics of reader by name.
func collect(t *testing.T, reader *sdkmetric.ManualReader) map[string]metricdata.Aggregation {
	var rm metricdata.ResourceMetrics
	require.NoError(t, reader.Collect(context.Background(), &rm))
	out := map[string]metricdata.Aggregation{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			out[m.Name] = m.Data
		}
	}
	return out
}

func histCount(a metricdata.Aggregation) uint64 {
	var n uint64
	for _, p := range a.(metricdata.Histogram[float64]).DataPoints {
		n += p.Count
	}
	return n
}

func sumValue(a metricdata.Aggregation) int64 {
	var n int64
	sum, _ := a.(metricdata.Sum[int64]) // absent until first recorded
	for _, p := range sum.DataPoints {
		n += p.Value
	}
	return n
}

func TestMetrics(t *testing.T) {
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	defer mp.Shutdown(context.Background())
	srv := redistest.Shared(t)
	c, _ := newClient(t, srv, Options{MeterProvider: mp, WatchdogTimeout: 300 * time.Millisecond})
	other, _ := newClient(t, srv, Options{})
	name := lockName(t)
	l := newLock(t, c, name)
	base := testCtx(t, 20*time.Second)
	a, b := NewOwner(base), NewOwner(base)

	require.NoError(t, l.Lock(a))
	require.NoError(t, l.Lock(a))
	assert.ErrorIs(t, l.TryLock(b, 0, 0), ErrLocked)
	m := collect(t, reader)
	assert.Equal(t, uint64(3), histCount(m["goredisson.lock.acquire.duration"]))
	assert.Equal(t, int64(1), sumValue(m["goredisson.lock.held"]), "one (lock, owner) pair held")
	require.Eventually(t, func() bool {
		return sumValue(collect(t, reader)["goredisson.lock.renewals"]) >= 2
	}, 5*time.Second, 20*time.Millisecond, "watchdog renewals are counted")

	require.NoError(t, l.Unlock(a))
	require.NoError(t, l.Unlock(a))
	m = collect(t, reader)
	assert.Equal(t, uint64(1), histCount(m["goredisson.lock.hold.duration"]), "one hold, from first lock to final unlock")
	assert.Equal(t, int64(0), sumValue(m["goredisson.lock.held"]))

	require.NoError(t, l.Lock(a))
	ok, err := newLock(t, other, name).ForceUnlock(base)
	require.NoError(t, err)
	require.True(t, ok)
	require.Eventually(t, func() bool {
		return sumValue(collect(t, reader)["goredisson.lock.lost"]) == 1
	}, 5*time.Second, 20*time.Millisecond, "a lost lock is counted")
	assert.Equal(t, int64(0), sumValue(collect(t, reader)["goredisson.lock.held"]))
}

// syncBuffer is a bytes.Buffer safe for the logger's concurrent writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestLoggerWarnings(t *testing.T) {
	var out syncBuffer
	logger := slog.New(slog.NewTextHandler(&out, nil))
	srv := redistest.Shared(t)
	c, _ := newClient(t, srv, Options{Logger: logger, HoldWarning: 100 * time.Millisecond, WatchdogTimeout: 300 * time.Millisecond})
	other, _ := newClient(t, srv, Options{})
	name := lockName(t)
	l := newLock(t, c, name)
	ctx := NewOwner(testCtx(t, 20*time.Second))
	require.NoError(t, l.Lock(ctx))
	require.Eventually(t, func() bool {
		return bytes.Contains([]byte(out.String()), []byte("held longer than the warning threshold"))
	}, 5*time.Second, 10*time.Millisecond)
	_, err := newLock(t, other, name).ForceUnlock(ctx)
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		return bytes.Contains([]byte(out.String()), []byte("rlock: lock lost"))
	}, 5*time.Second, 10*time.Millisecond)
	assert.Contains(t, out.String(), "lock="+name)
}
