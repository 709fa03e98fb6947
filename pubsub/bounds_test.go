package pubsub

import (
	"context"
	"math"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// boundWaiter returns a Waiter of a group of its own, on no subscription: enough to wait.
func boundWaiter() *Waiter {
	return &Waiter{g: &group{}, wake: make(chan struct{}, 1)}
}

// boundsNow returns the grains the bounds table holds, and how many waits they bound.
func boundsNow() (grains map[int64]bool, waits int) {
	bounds.mu.Lock()
	defer bounds.mu.Unlock()
	grains = map[int64]bool{}
	for end, g := range bounds.grains {
		grains[end] = true
		for w := g.first; w != nil; w = w.bound.next {
			waits++
		}
	}
	return grains, waits
}

// waitAtMost runs w.WaitAtMost(d) on a goroutine of its own; the channel gets whether a
// wake-up ended it.
func waitAtMost(t *testing.T, w *Waiter, d time.Duration) <-chan bool {
	out := make(chan bool, 1)
	go func() {
		woken, err := w.WaitAtMost(context.Background(), d)
		assert.NoError(t, err)
		out <- woken
	}()
	return out
}

// Waits with the same bound end by it, never early, and leave the table.
func TestBoundsEndWaits(t *testing.T) {
	const n, d = 100, 200 * time.Millisecond
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			start := time.Now()
			woken, err := boundWaiter().WaitAtMost(context.Background(), d)
			elapsed := time.Since(start)
			assert.NoError(t, err)
			assert.False(t, woken, "ended by its bound")
			assert.GreaterOrEqual(t, elapsed, d, "a bound is never met early")
		})
	}
	wg.Wait()
	_, waits := boundsNow()
	assert.Zero(t, waits, "an ended wait leaves its grain")
}

// Many waits with a bound seconds away share one timer per grain of their ends.
func TestBoundsShareTimers(t *testing.T) {
	const n, d = 1000, 10 * time.Second
	ws := make([]*Waiter, n)
	outs := make([]<-chan bool, n)
	start := time.Now()
	for i := range ws {
		ws[i] = boundWaiter()
		outs[i] = waitAtMost(t, ws[i], d)
	}
	require.Eventually(t, func() bool { _, waits := boundsNow(); return waits == n },
		5*time.Second, time.Millisecond, "every wait is in a grain")
	spread := time.Since(start)
	grains, _ := boundsNow()
	assert.LessOrEqual(t, len(grains), int(spread/grainOf(d))+2,
		"%d waits begun within %v share a timer per %v", n, spread, grainOf(d))
	for i, w := range ws {
		w.wake <- struct{}{}
		assert.True(t, <-outs[i], "waiter %d: woken", i)
	}
	_, waits := boundsNow()
	assert.Zero(t, waits, "a woken wait leaves its grain")
}

// The end of a grain that a woken wait left does not cut the waiter's next wait short.
func TestBoundsEndOnlyTheirOwnWait(t *testing.T) {
	w := boundWaiter()
	first := waitAtMost(t, w, 50*time.Millisecond)
	require.Eventually(t, func() bool { _, waits := boundsNow(); return waits == 1 },
		time.Second, time.Millisecond)
	bounds.mu.Lock()
	end := w.bound.grain.end
	bounds.mu.Unlock()
	w.wake <- struct{}{}
	assert.True(t, <-first, "woken, not ended by the bound")

	next := waitAtMost(t, w, time.Hour)
	require.Eventually(t, func() bool { _, waits := boundsNow(); return waits == 1 },
		time.Second, time.Millisecond)
	require.Eventually(t, func() bool { grains, _ := boundsNow(); return !grains[end] },
		time.Second, time.Millisecond, "the first wait's grain ends")
	select {
	case <-next:
		t.Fatal("the first wait's grain ended the next wait")
	default:
	}
	w.wake <- struct{}{}
	assert.True(t, <-next)
}

// A bound beyond the dates Unix nanoseconds can hold ends no wait.
func TestBoundsFarEnd(t *testing.T) {
	w := boundWaiter()
	out := waitAtMost(t, w, time.Duration(math.MaxInt64))
	require.Eventually(t, func() bool { _, waits := boundsNow(); return waits == 1 },
		time.Second, time.Millisecond)
	bounds.mu.Lock()
	end := time.Unix(0, w.bound.grain.end)
	bounds.mu.Unlock()
	assert.True(t, end.After(time.Now().Add(99*365*24*time.Hour)), "its grain ends in %v", end)
	w.wake <- struct{}{}
	assert.True(t, <-out, "woken, not ended by the bound")
}

func TestGrainOf(t *testing.T) {
	for _, c := range []struct{ d, want time.Duration }{
		{0, minGrain},
		{time.Millisecond, minGrain},
		{100 * time.Millisecond, 200 * time.Microsecond},
		{time.Second, 3200 * time.Microsecond},
		{30 * time.Second, maxGrain},
	} {
		assert.Equal(t, c.want, grainOf(c.d), "grain of %v", c.d)
	}
}
