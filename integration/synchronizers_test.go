package integration

import (
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/goredisson/goredisson/internal/redistest"
)

// TestInteropCountDownLatch: Java counts down a latch that Go awaiters wait on, and Go counts
// down one that Java awaits; each side reads the other's count.
func TestInteropCountDownLatch(t *testing.T) {
	forEachVersion(t, func(t *testing.T, v string) {
		e := newEnv(t, v, 0)
		const name = "interopL:latch"
		l := e.goc.NewCountDownLatch(name)

		assert.Equal(t, "true", e.peer.Must(t, e.ctx, "J0", "latch.await", name, "0"), "Java: a latch never set is open")
		require.NoError(t, l.Await(e.ctx), "Go: a latch never set is open")

		// Java counts down, Go awaits.
		assert.Equal(t, "true", e.peer.Must(t, e.ctx, "J0", "latch.setcount", name, "2"))
		set, err := l.TrySetCount(e.ctx, 5)
		require.NoError(t, err)
		assert.False(t, set, "Java set the count")
		n, err := l.Count(e.ctx)
		require.NoError(t, err)
		assert.Equal(t, int64(2), n)
		var wg sync.WaitGroup
		for range 4 {
			wg.Go(func() { assert.NoError(t, l.Await(e.ctx)) })
		}
		e.peer.Must(t, e.ctx, "J0", "latch.countdown", name)
		e.peer.Must(t, e.ctx, "J0", "latch.countdown", name)
		wg.Wait()

		// Go counts down, Java awaits.
		set, err = l.TrySetCount(e.ctx, 2)
		require.NoError(t, err)
		assert.True(t, set)
		assert.Equal(t, "2", e.peer.Must(t, e.ctx, "J0", "latch.count", name))
		awaited := make(chan string, 2)
		for _, owner := range []string{"J1", "J2"} {
			go func() { awaited <- e.peer.Must(t, e.ctx, owner, "latch.await", name, "30000") }()
		}
		require.True(t, redistest.Poll(10*time.Second, time.Millisecond, func() bool {
			return redistest.NumSub(t, e.rc, "redisson_countdownlatch__channel__{"+name+"}") > 0
		}), "Java subscribed")
		require.NoError(t, l.CountDown(e.ctx))
		require.NoError(t, l.CountDown(e.ctx))
		assert.Equal(t, "true", <-awaited)
		assert.Equal(t, "true", <-awaited)
		assert.False(t, redistest.Exists(t, e.rc, name))
	})
}

// TestInteropSemaphore: a Java release wakes a Go acquirer and a Go release a Java one; then
// Go and Java owners pass through a section guarded by one semaphore and are never more
// inside together than it has permits.
func TestInteropSemaphore(t *testing.T) {
	forEachVersion(t, func(t *testing.T, v string) {
		e := newEnv(t, v, 0)
		const name, counter, permits = "interopSem:sem", "interopSem:inside", 2
		s := e.goc.NewSemaphore(name)
		subscribed := func() { t.Helper(); requireSubscribed(t, e.rc, "redisson_sc:{"+name+"}") }

		// A Java release wakes a Go acquirer.
		acquired := make(chan error, 1)
		go func() { acquired <- s.Acquire(e.ctx, 1) }()
		subscribed()
		e.peer.Must(t, e.ctx, "J0", "sem.release", name, "1")
		require.NoError(t, <-acquired)
		n, err := s.AvailablePermits(e.ctx)
		require.NoError(t, err)
		assert.Zero(t, n)

		// A Go release wakes a Java acquirer.
		javaAcquired := make(chan string, 1)
		go func() { javaAcquired <- e.peer.Must(t, e.ctx, "J1", "sem.acquire", name, "1") }()
		subscribed()
		require.NoError(t, s.Release(e.ctx, 1))
		assert.Equal(t, "true", <-javaAcquired)
		assert.Equal(t, "0", e.peer.Must(t, e.ctx, "J0", "sem.available", name))

		// Go and Java share the permits.
		require.NoError(t, s.AddPermits(e.ctx, permits))
		const owners, rounds = 3, 20
		var most redistest.Peak
		var wg sync.WaitGroup
		for i := range owners {
			wg.Go(func() {
				for range rounds {
					if !assert.NoError(t, s.Acquire(e.ctx, 1)) {
						return
					}
					v, err := e.rc.Do(e.ctx, e.rc.B().Incr().Key(counter).Build()).AsInt64()
					assert.NoError(t, err)
					most.Note(v)
					assert.NoError(t, e.rc.Do(e.ctx, e.rc.B().Decr().Key(counter).Build()).Error())
					assert.NoError(t, s.Release(e.ctx, 1))
				}
			})
			wg.Go(func() {
				owner := fmt.Sprintf("Jsem%d", i)
				for range rounds {
					v, err := strconv.ParseInt(e.peer.Must(t, e.ctx, owner, "sem.inside", name, counter), 10, 64)
					assert.NoError(t, err)
					most.Note(v)
				}
			})
		}
		wg.Wait()
		assert.LessOrEqual(t, most.Load(), int64(permits), "never more inside than permits")
		assert.Equal(t, fmt.Sprint(permits), e.peer.Must(t, e.ctx, "J0", "sem.available", name), "every permit came back")
	})
}

// requireSubscribed waits until a client is subscribed to channel on the server of rc.
func requireSubscribed(t *testing.T, rc rueidis.Client, channel string) {
	t.Helper()
	require.True(t, redistest.Poll(10*time.Second, time.Millisecond, func() bool {
		return redistest.NumSub(t, rc, channel) > 0
	}), "a waiter subscribed to %s", channel)
}
