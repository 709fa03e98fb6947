package rlockotel

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/goredisson/goredisson/internal/redistest"
	"github.com/goredisson/goredisson/internal/redistest/rlocktest"
	"github.com/goredisson/goredisson/rlock"
)

func TestMain(m *testing.M) {
	redistest.ExportURL("REDIS_URL") // for the Example
	redistest.Main(m)
}

// testTimeout bounds every test's context.
const testTimeout = time.Minute

// fixture is two Clients on the shared server, the first observed by obs, a lock name of
// the test's own, and a context bounded by testTimeout.
type fixture struct {
	srv      *redistest.Server
	c, other *rlock.Client
	name     string
	ctx      context.Context
}

func newFixture(t *testing.T, cfg Config, opts rlock.Options) *fixture {
	t.Helper()
	obs, err := New(cfg)
	require.NoError(t, err)
	srv := redistest.Shared(t)
	opts.Observer = obs
	return &fixture{
		srv:   srv,
		c:     rlocktest.NewClient(t, srv.Client(t), opts),
		other: rlocktest.NewClient(t, srv.Client(t), rlock.Options{}),
		name:  redistest.Name(t),
		ctx:   redistest.Context(t, testTimeout),
	}
}

// newTracing returns a TracerProvider that records every span, and the recorder.
func newTracing(t *testing.T) (*sdktrace.TracerProvider, *tracetest.SpanRecorder) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	return tp, rec
}
