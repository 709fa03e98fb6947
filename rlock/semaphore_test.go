package rlock

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/goredisson/goredisson/internal/faultproxy"
	"github.com/goredisson/goredisson/internal/redistest"
)

func TestSemaphore(t *testing.T) {
	f := newFixture(t, Options{})
	s := f.c.NewSemaphore(f.name)
	available := func() int64 {
		t.Helper()
		n, err := s.AvailablePermits(f.base)
		require.NoError(t, err)
		return n
	}

	assert.Zero(t, available(), "no key, no permits")
	err := s.TryAcquire(f.base, 1, 0)
	require.ErrorIs(t, err, ErrNoPermits)
	assert.ErrorIs(t, err, ErrLocked, "as every Try of the package")
	assert.ErrorContains(t, err, `rlock: TryAcquire "`+f.name+`": not enough permits available`)

	set, err := s.TrySetPermits(f.base, 3)
	require.NoError(t, err)
	assert.True(t, set)
	set, err = s.TrySetPermits(f.base, 9)
	require.NoError(t, err)
	assert.False(t, set, "already set")

	require.NoError(t, s.Acquire(f.base, 2))
	assert.Equal(t, int64(1), available())
	assert.ErrorIs(t, s.TryAcquire(f.base, 2, 20*time.Millisecond), ErrNoPermits, "only 1 left")
	assert.Equal(t, int64(1), available())

	require.NoError(t, s.Release(f.base, 2))
	require.NoError(t, s.AddPermits(f.base, 2))
	assert.Equal(t, int64(5), available())
	require.NoError(t, s.AddPermits(f.base, -1))
	assert.Equal(t, int64(4), available())
	n, err := s.DrainPermits(f.base)
	require.NoError(t, err)
	assert.Equal(t, int64(4), n)
	assert.Zero(t, available())
}

// TestSemaphoreWakesByReleasedPermits: waiters sleep until a release, and a release of n
// permits lets n of them through.
func TestSemaphoreWakesByReleasedPermits(t *testing.T) {
	f := newFixture(t, Options{})
	s := f.c.NewSemaphore(f.name)
	const waiters = 4
	var got atomic.Int32
	var wg sync.WaitGroup
	for range waiters {
		wg.Go(func() {
			if assert.NoError(t, s.Acquire(f.base, 1)) {
				got.Add(1)
			}
		})
	}
	require.True(t, redistest.Poll(10*time.Second, time.Millisecond, func() bool {
		return redistest.NumSub(t, f.rc, s.channel) > 0
	}))
	require.NoError(t, s.Release(f.base, 2))
	require.True(t, redistest.Poll(10*time.Second, time.Millisecond, func() bool { return got.Load() == 2 }))
	require.NoError(t, s.Release(f.base, 2))
	wg.Wait()
	assert.Equal(t, int32(waiters), got.Load())
	n, err := s.AvailablePermits(f.base)
	require.NoError(t, err)
	assert.Zero(t, n)
}

// TestSemaphoreNeverOverfull: owners that contend for permits are never more inside than
// there are permits, and every permit comes back.
func TestSemaphoreNeverOverfull(t *testing.T) {
	f := newFixture(t, Options{})
	s := f.c.NewSemaphore(f.name)
	const permits, owners, rounds = 3, 8, 20
	_, err := s.TrySetPermits(f.base, permits)
	require.NoError(t, err)
	var inside redistest.Occupancy
	var wg sync.WaitGroup
	for i := range owners {
		wg.Go(func() {
			n := int64(1 + i%2) // owners of 1 and of 2 permits
			for range rounds {
				if !assert.NoError(t, s.Acquire(f.base, n)) {
					return
				}
				inside.Enter(n)()
				assert.NoError(t, s.Release(f.base, n))
			}
		})
	}
	wg.Wait()
	assert.LessOrEqual(t, inside.Most(), int64(permits))
	assert.Equal(t, int64(owners*rounds), inside.Entries())
	n, err := s.AvailablePermits(f.base)
	require.NoError(t, err)
	assert.Equal(t, int64(permits), n)
}

func TestSemaphoreErrors(t *testing.T) {
	f := newFixture(t, Options{})
	s := f.c.NewSemaphore(f.name)
	for _, n := range []int64{0, -1} {
		err := s.Acquire(f.base, n)
		assert.ErrorIs(t, err, ErrInvalidPermits)
		assert.Contains(t, err.Error(), `rlock: Acquire "`+f.name+`": invalid permits`)
		assert.ErrorIs(t, s.TryAcquire(f.base, n, 0), ErrInvalidPermits)
		assert.ErrorIs(t, s.Release(f.base, n), ErrInvalidPermits)
	}
	_, err := s.TrySetPermits(f.base, -1)
	assert.ErrorIs(t, err, ErrInvalidPermits)
	assert.ErrorIs(t, s.AddPermits(f.base, 0), ErrInvalidPermits)
	// Beyond Java's int: refused before anything is written (Lua's doubles would have stored
	// a float that no later call could read).
	for _, n := range []int64{math.MaxInt32 + 1, math.MaxInt64} {
		assert.ErrorIs(t, s.Acquire(f.base, n), ErrInvalidPermits)
		assert.ErrorIs(t, s.Release(f.base, n), ErrInvalidPermits)
		assert.ErrorIs(t, s.AddPermits(f.base, n), ErrInvalidPermits)
		assert.ErrorIs(t, s.AddPermits(f.base, -n-1), ErrInvalidPermits)
		_, err = s.TrySetPermits(f.base, n)
		assert.ErrorIs(t, err, ErrInvalidPermits)
	}
	assert.False(t, redistest.Exists(t, f.rc, f.name), "nothing written")
	require.NoError(t, s.AddPermits(f.base, math.MaxInt32))
	n, err := s.AvailablePermits(f.base)
	require.NoError(t, err)
	assert.Equal(t, int64(math.MaxInt32), n)
	require.NoError(t, s.AddPermits(f.base, math.MinInt32))
	n, err = s.AvailablePermits(f.base)
	require.NoError(t, err)
	assert.Equal(t, int64(-1), n)
	assert.ErrorIs(t, s.TryAcquire(f.base, 1, -time.Second), ErrInvalidWait)
	assert.ErrorIs(t, f.c.NewSemaphore("").Release(f.base, 1), ErrEmptyName)

	short, cancel := context.WithTimeout(f.base, 30*time.Millisecond)
	defer cancel()
	assert.ErrorIs(t, s.Acquire(short, 1), context.DeadlineExceeded)
	f.c.Close()
	_, err = s.AvailablePermits(f.base)
	assert.ErrorIs(t, err, ErrClosed)
}

// Acquires whose ctx is cancelled at random moments, mid-request included (a proxy delays
// each direction by 2 ms), take nothing: permits a request took after its caller gave up
// are given back, so once the give-backs are done every permit is available again (and no
// expirable-semaphore id is left held).
func TestSemaphoreCancelledAcquireTakesNothing(t *testing.T) {
	srv := redistest.Shared(t)
	p, err := faultproxy.Start(srv.Addr)
	require.NoError(t, err)
	t.Cleanup(func() { p.Close() })
	rc, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{p.Addr}})
	require.NoError(t, err)
	t.Cleanup(rc.Close)
	c, err := New(context.Background(), rc, Options{})
	require.NoError(t, err)
	t.Cleanup(c.Close)
	base := redistest.Context(t, testTimeout)
	name := redistest.Name(t)
	const permits = 1000
	s, x := c.NewSemaphore(name+":sem"), c.NewExpirableSemaphore(name+":xsem")
	_, err = s.TrySetPermits(base, permits)
	require.NoError(t, err)
	_, err = x.TrySetPermits(base, permits)
	require.NoError(t, err)
	p.SetDelay(2*time.Millisecond, nil)
	cancelled := 0
	for i := range 200 {
		// Without a deadline: rueidis then abandons a request when its ctx ends (with one, it
		// waits for the reply).
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(time.Duration(rand.IntN(6000))*time.Microsecond, cancel)
		if i%2 == 0 {
			err := s.TryAcquire(ctx, 1, 0)
			if err == nil {
				require.NoError(t, s.Release(base, 1))
			} else if !errors.Is(err, ErrNoPermits) {
				require.ErrorIs(t, err, context.Canceled)
				cancelled++
			}
		} else {
			ids, err := x.TryAcquire(ctx, 1, 0, 0)
			if err == nil {
				require.NoError(t, x.Release(base, ids...))
			} else if !errors.Is(err, ErrNoPermits) {
				require.ErrorIs(t, err, context.Canceled)
				cancelled++
			}
		}
		cancel()
	}
	t.Logf("%d of 200 acquires cancelled", cancelled)
	require.True(t, redistest.Poll(10*time.Second, time.Millisecond, func() bool {
		n, err := s.AvailablePermits(base)
		require.NoError(t, err)
		m, err := x.AvailablePermits(base)
		require.NoError(t, err)
		held, err := x.AcquiredPermits(base)
		require.NoError(t, err)
		return n == permits && m == permits && held == 0
	}), "every permit available again")
}
