package rlock

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/goredisson/goredisson/internal/redistest"
)

func TestCountDownLatch(t *testing.T) {
	f := newFixture(t, Options{})
	l := f.c.NewCountDownLatch(f.name)

	require.NoError(t, l.Await(f.base), "a latch never set is open")
	n, err := l.Count(f.base)
	require.NoError(t, err)
	assert.Zero(t, n)

	set, err := l.TrySetCount(f.base, 3)
	require.NoError(t, err)
	assert.True(t, set)
	set, err = l.TrySetCount(f.base, 5)
	require.NoError(t, err)
	assert.False(t, set, "already set")

	const awaiters = 8
	var woken sync.WaitGroup
	errs := make(chan error, awaiters)
	for range awaiters {
		woken.Add(1)
		go func() {
			defer woken.Done()
			errs <- l.Await(f.base)
		}()
	}
	for i := 3; i > 1; i-- {
		require.NoError(t, l.CountDown(f.base))
	}
	short, cancel := context.WithTimeout(f.base, 50*time.Millisecond)
	defer cancel()
	assert.ErrorIs(t, l.Await(short), context.DeadlineExceeded, "count 1: still closed")
	n, err = l.Count(f.base)
	require.NoError(t, err)
	assert.Equal(t, int64(1), n)
	select {
	case err := <-errs:
		t.Fatalf("an awaiter returned before the count reached zero: %v", err)
	default:
	}

	require.NoError(t, l.CountDown(f.base))
	woken.Wait()
	close(errs)
	for err := range errs {
		assert.NoError(t, err)
	}
	assert.False(t, redistest.Exists(t, f.rc, f.name), "the key is deleted at zero")
	require.NoError(t, l.CountDown(f.base), "counting down an open latch changes nothing")
	assert.False(t, redistest.Exists(t, f.rc, f.name))

	set, err = l.TrySetCount(f.base, 1)
	require.NoError(t, err)
	assert.True(t, set, "an open latch can be set again")
	del, err := l.Delete(f.base)
	require.NoError(t, err)
	assert.True(t, del)
	del, err = l.Delete(f.base)
	require.NoError(t, err)
	assert.False(t, del)
}

func TestCountDownLatchOpensOnce(t *testing.T) {
	f := newFixture(t, Options{})
	l := f.c.NewCountDownLatch(f.name)
	const n = 20
	_, err := l.TrySetCount(f.base, n)
	require.NoError(t, err)
	msgs := f.srv.Listen(t, "redisson_countdownlatch__channel__{"+f.name+"}")
	var wg sync.WaitGroup
	for range n + 5 {
		wg.Go(func() { assert.NoError(t, l.CountDown(f.base)) })
	}
	wg.Wait()
	assert.Equal(t, []string{"0"}, redistest.Published(t, f.rc, "redisson_countdownlatch__channel__{"+f.name+"}", msgs), `"0" published exactly once`)
}

func TestCountDownLatchErrors(t *testing.T) {
	f := newFixture(t, Options{})
	l := f.c.NewCountDownLatch(f.name)
	for _, n := range []int64{0, -1} {
		_, err := l.TrySetCount(f.base, n)
		assert.ErrorIs(t, err, ErrInvalidCount)
		assert.Contains(t, err.Error(), `rlock: TrySetCount "`+f.name+`": invalid count`)
	}
	assert.ErrorIs(t, f.c.NewCountDownLatch("").Await(f.base), ErrEmptyName)
	f.c.Close()
	assert.ErrorIs(t, l.CountDown(f.base), ErrClosed)
}

func TestCountDownLatchAwaitEndsWithClose(t *testing.T) {
	f := newFixture(t, Options{})
	l := f.c.NewCountDownLatch(f.name)
	_, err := l.TrySetCount(f.base, 1)
	require.NoError(t, err)
	done := make(chan error, 1)
	go func() { done <- l.Await(f.base) }()
	require.True(t, redistest.Poll(10*time.Second, time.Millisecond, func() bool {
		return redistest.NumSub(t, f.rc, l.channel) > 0
	}))
	f.c.Close()
	err = <-done
	assert.True(t, errors.Is(err, ErrClosed), "%v", err)
}
