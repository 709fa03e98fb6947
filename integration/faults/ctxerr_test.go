package faults

import (
	"context"
	"errors"
	"math/rand/v2"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/goredisson/goredisson/internal/redistest"
	"github.com/goredisson/goredisson/rlock"
)

// TestContextErrorsOnlyWhenCallerEnded: 64 goroutines over 3 Clients lock and unlock 200
// names while every 250 ms the server kills the clients' connections (CLIENT KILL, normal
// and pub/sub in turn). A call whose ctx is alive never returns an error matching a context
// error (a failure of the connection is a connection error), and no two owners ever hold a
// name at once. GOREDISSON_SLOW=1 runs it for 1,000,000 acquisitions over 1,000 names.
func TestContextErrorsOnlyWhenCallerEnded(t *testing.T) {
	names, target, limit := 200, int64(0), 10*time.Second
	if os.Getenv(slowEnv) != "" {
		names, target, limit = 1000, 1_000_000, 30*time.Minute
	}
	srv := redistest.Start(t)
	admin := srv.Client(t)
	clients := make([]*rlock.Client, 3)
	for i := range clients {
		c, err := rlock.New(t.Context(), srv.Client(t), rlock.Options{})
		require.NoError(t, err)
		t.Cleanup(c.Close)
		clients[i] = c
	}
	base, cancel := context.WithTimeout(context.Background(), limit+2*time.Minute)
	defer cancel()
	stop := make(chan struct{})
	end := time.Now().Add(limit)

	var kills sync.WaitGroup
	kills.Go(func() {
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			case <-time.After(250 * time.Millisecond):
			}
			kind := []string{"normal", "pubsub"}[i%2]
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			_ = admin.Do(ctx, admin.B().ClientKill().TypeNormal().Build()).Error()
			if kind == "pubsub" {
				_ = admin.Do(ctx, admin.B().ClientKill().TypePubsub().Build()).Error()
			}
			cancel()
		}
	})

	holders := make([]atomic.Int32, names)
	var acquired, ctxErrs, otherErrs, overlaps atomic.Int64
	var firstCtxErr atomic.Value
	var wg sync.WaitGroup
	for g := range 64 {
		wg.Go(func() {
			c := clients[g%len(clients)]
			for time.Now().Before(end) && (target == 0 || acquired.Load() < target) {
				i := rand.IntN(names)
				l := c.NewLock("ctxerr:" + strconv.Itoa(i))
				ctx := rlock.NewOwner(base)
				err := l.Lock(ctx)
				if err != nil {
					if ctx.Err() == nil && (errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)) {
						ctxErrs.Add(1)
						firstCtxErr.CompareAndSwap(nil, err.Error())
					} else {
						otherErrs.Add(1)
					}
					continue
				}
				if holders[i].Add(1) != 1 {
					overlaps.Add(1)
				}
				acquired.Add(1)
				holders[i].Add(-1)
				_ = l.Unlock(ctx)
			}
		})
	}
	wg.Wait()
	close(stop)
	kills.Wait()
	t.Logf("acquisitions %d, connection errors %d, context errors while the ctx was alive %d, overlaps %d",
		acquired.Load(), otherErrs.Load(), ctxErrs.Load(), overlaps.Load())
	assert.Zero(t, ctxErrs.Load(), "context errors while the caller's ctx was alive; first: %v", firstCtxErr.Load())
	assert.Zero(t, overlaps.Load(), "two owners held one name at once")
	assert.Positive(t, acquired.Load())
}
