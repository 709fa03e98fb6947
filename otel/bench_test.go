package rlockotel

import (
	"context"
	"testing"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/goredisson/goredisson/internal/redistest"
	"github.com/goredisson/goredisson/internal/redistest/rlocktest"
	"github.com/goredisson/goredisson/rlock"
)

// BenchmarkLockUnlock is rlock's BenchmarkLockUnlock with this Observer on SDK providers
// that record every span and metric (no exporter): the cost of turning OpenTelemetry on.
func BenchmarkLockUnlock(b *testing.B) {
	for _, bc := range []struct {
		name string
		cfg  func() Config
	}{
		{"metrics", func() Config {
			return Config{MeterProvider: sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))}
		}},
		{"metrics+traces", func() Config {
			return Config{MeterProvider: sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader())),
				TracerProvider: sdktrace.NewTracerProvider()}
		}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			obs, err := New(bc.cfg())
			if err != nil {
				b.Fatal(err)
			}
			c := rlocktest.NewClient(b, redistest.Shared(b).Client(b), rlock.Options{Observer: obs})
			l := c.NewLock(redistest.Name(b))
			ctx := rlock.NewOwner(context.Background())
			for b.Loop() {
				if err := l.Lock(ctx); err != nil {
					b.Fatal(err)
				}
				if err := l.Unlock(ctx); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
