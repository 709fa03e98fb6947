package rlockotel_test

import (
	"context"
	"fmt"
	"os"

	"github.com/redis/rueidis"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	rlockotel "github.com/goredisson/goredisson/otel"
	"github.com/goredisson/goredisson/rlock"
)

// Example turns on OpenTelemetry for a Client: its metrics go to mp, and every lock
// operation is a span of tp under the caller's ctx.
func Example() {
	ctx := context.Background()
	tp, mp := sdktrace.NewTracerProvider(), sdkmetric.NewMeterProvider() // the service's providers
	defer tp.Shutdown(ctx)
	defer mp.Shutdown(ctx)
	opt, err := rueidis.ParseURL(os.Getenv("REDIS_URL"))
	if err != nil {
		fmt.Println(err)
		return
	}
	rc, err := rueidis.NewClient(opt)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer rc.Close()

	obs, err := rlockotel.New(rlockotel.Config{TracerProvider: tp, MeterProvider: mp})
	if err != nil {
		fmt.Println(err)
		return
	}
	locks, err := rlock.New(ctx, rc, rlock.Options{Observer: obs})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer locks.Close()

	fmt.Println(locks.NewLock("example:otel").Do(ctx, func(ctx context.Context) error { return nil }))
	// Output: <nil>
}
