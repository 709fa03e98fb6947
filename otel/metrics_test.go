package rlockotel

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/goredisson/goredisson/rlock"
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

// histCount is the number of values a histogram recorded, by outcome when it has one.
func histCount(a metricdata.Aggregation) map[string]uint64 {
	n := map[string]uint64{}
	for _, p := range a.(metricdata.Histogram[float64]).DataPoints {
		outcome, _ := p.Attributes.Value("outcome")
		n[outcome.AsString()] += p.Count
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
	f := newFixture(t, Config{MeterProvider: mp}, rlock.Options{WatchdogTimeout: 300 * time.Millisecond})
	l, a := f.c.NewLock(f.name), rlock.NewOwner(f.ctx)

	// Each subtest starts where the one before it left the lock.
	t.Run("acquisitions and renewals", func(t *testing.T) {
		require.NoError(t, l.Lock(a))
		require.NoError(t, l.Lock(a))
		assert.ErrorIs(t, l.TryLock(rlock.NewOwner(f.ctx), 0, 0), rlock.ErrLocked)
		m := collect(t, reader)
		assert.Equal(t, map[string]uint64{"acquired": 2, "locked": 1}, histCount(m["goredisson.lock.acquire.duration"]))
		assert.Equal(t, int64(1), sumValue(m["goredisson.lock.held"]), "one (lock, owner) pair held")
		require.Eventually(t, func() bool {
			return sumValue(collect(t, reader)["goredisson.lock.renewals"]) >= 2
		}, 5*time.Second, 20*time.Millisecond, "watchdog renewals are counted")
	})

	t.Run("hold duration", func(t *testing.T) {
		require.NoError(t, l.Unlock(a))
		require.NoError(t, l.Unlock(a))
		m := collect(t, reader)
		assert.Equal(t, map[string]uint64{"": 1}, histCount(m["goredisson.lock.hold.duration"]), "one hold, from first lock to final unlock")
		assert.Equal(t, int64(0), sumValue(m["goredisson.lock.held"]))
	})

	t.Run("lost", func(t *testing.T) {
		require.NoError(t, l.Lock(a))
		ok, err := f.other.NewLock(f.name).ForceUnlock(f.ctx)
		require.NoError(t, err)
		require.True(t, ok)
		require.Eventually(t, func() bool {
			return sumValue(collect(t, reader)["goredisson.lock.lost"]) == 1
		}, 5*time.Second, 20*time.Millisecond, "a lost lock is counted")
		assert.Equal(t, int64(0), sumValue(collect(t, reader)["goredisson.lock.held"]))
	})

	t.Run("renewals stay counted after Close", func(t *testing.T) {
		before := sumValue(collect(t, reader)["goredisson.lock.renewals"])
		f.c.Close()
		assert.GreaterOrEqual(t, sumValue(collect(t, reader)["goredisson.lock.renewals"]), before)
	})
}
