package integration

import (
	"sync"
	"testing"
	"time"

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
