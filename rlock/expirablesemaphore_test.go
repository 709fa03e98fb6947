package rlock

import (
	"context"
	"encoding/hex"
	"math"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/goredisson/goredisson/internal/redistest"
)

func TestExpirableSemaphore(t *testing.T) {
	f := newFixture(t, Options{})
	s := f.c.NewExpirableSemaphore(f.name)
	count := func(get func(context.Context) (int64, error)) int64 {
		t.Helper()
		n, err := get(f.base)
		require.NoError(t, err)
		return n
	}

	ids, err := s.TryAcquire(f.base, 1, 0, 0)
	require.ErrorIs(t, err, ErrNoPermits, "no key, no permits")
	assert.ErrorIs(t, err, ErrLocked)
	assert.Nil(t, ids)
	set, err := s.TrySetPermits(f.base, 3)
	require.NoError(t, err)
	assert.True(t, set)
	set, err = s.TrySetPermits(f.base, 9)
	require.NoError(t, err)
	assert.False(t, set, "already set")

	ids, err = s.Acquire(f.base, 2, time.Minute)
	require.NoError(t, err)
	require.Len(t, ids, 2)
	for _, id := range ids {
		b, err := hex.DecodeString(id)
		require.NoError(t, err)
		assert.Len(t, b, 16, "16 random bytes, shown as 32 hex digits")
		assert.True(t, redistest.Exists(t, f.rc, "{"+f.name+"}:timeout"))
		score, err := f.rc.Do(f.base, f.rc.B().Zscore().Key("{"+f.name+"}:timeout").Member(string(b)).Build()).AsFloat64()
		require.NoError(t, err, "the raw bytes are the member")
		assert.InDelta(t, float64(time.Now().Add(time.Minute).UnixMilli()), score, float64(10*time.Second/time.Millisecond))
	}
	assert.NotEqual(t, ids[0], ids[1])
	assert.Equal(t, int64(1), count(s.AvailablePermits))
	assert.Equal(t, int64(2), count(s.AcquiredPermits))
	assert.Equal(t, int64(3), count(s.Permits))
	more, err := s.TryAcquire(f.base, 2, 20*time.Millisecond, 0)
	require.ErrorIs(t, err, ErrNoPermits, "only 1 left")
	assert.Nil(t, more)

	lease, expires, err := s.LeaseTime(f.base, ids[0])
	require.NoError(t, err)
	assert.True(t, expires)
	assert.InDelta(t, time.Minute, lease, float64(10*time.Second))
	ok, err := s.UpdateLeaseTime(f.base, ids[0], 0)
	require.NoError(t, err)
	assert.True(t, ok)
	_, expires, err = s.LeaseTime(f.base, ids[0])
	require.NoError(t, err)
	assert.False(t, expires, "lease 0: never expires")

	ok, err = s.TryRelease(f.base, ids[0])
	require.NoError(t, err)
	assert.True(t, ok)
	ok, err = s.TryRelease(f.base, ids[0])
	require.NoError(t, err)
	assert.False(t, ok, "already released")
	err = s.Release(f.base, ids[0])
	assert.ErrorIs(t, err, ErrPermitNotHeld)
	assert.Contains(t, err.Error(), `rlock: Release "`+f.name+`": permit not held: `+ids[0])
	ok, err = s.UpdateLeaseTime(f.base, ids[0], time.Second)
	require.NoError(t, err)
	assert.False(t, ok, "not held")
	_, _, err = s.LeaseTime(f.base, ids[0])
	assert.ErrorIs(t, err, ErrPermitNotHeld)

	three, err := s.Acquire(f.base, 2, 0)
	require.NoError(t, err)
	assert.ErrorIs(t, s.Release(f.base, three[0], ids[0]), ErrPermitNotHeld, "all or none")
	assert.Equal(t, int64(3), count(s.AcquiredPermits))
	require.NoError(t, s.Release(f.base, append(three, ids[1])...))
	assert.Equal(t, int64(3), count(s.AvailablePermits))
	require.NoError(t, s.AddPermits(f.base, 2))
	require.NoError(t, s.AddPermits(f.base, -1))
	assert.Equal(t, int64(4), count(s.Permits))
	_, err = s.Acquire(f.base, 1, time.Minute)
	require.NoError(t, err)
	deleted, err := s.Delete(f.base)
	require.NoError(t, err)
	assert.True(t, deleted)
	assert.False(t, redistest.Exists(t, f.rc, f.name))
	assert.False(t, redistest.Exists(t, f.rc, "{"+f.name+"}:timeout"))
	deleted, err = s.Delete(f.base)
	require.NoError(t, err)
	assert.False(t, deleted)
}

// TestExpirableSemaphoreExpiredPermitsComeBack: permits whose holder forgot them come back at
// their expiry, and a waiter that nobody wakes (an expiry publishes nothing) takes one then,
// having tried only a few times: it sleeps until the earliest expiry, it does not poll.
func TestExpirableSemaphoreExpiredPermitsComeBack(t *testing.T) {
	f := newFixtureOn(t, redistest.Start(t), Options{})
	s := f.c.NewExpirableSemaphore(f.name)
	_, err := s.TrySetPermits(f.base, 2)
	require.NoError(t, err)
	const lease = 700 * time.Millisecond
	forgotten, err := s.Acquire(f.base, 2, lease)
	require.NoError(t, err)
	start := time.Now()

	failed := redistest.Calls(t, f.rc, "zrange") // the acquire script's failed tries
	ids, err := s.Acquire(f.base, 1, 0)
	require.NoError(t, err)
	assert.GreaterOrEqual(t, time.Since(start), lease-50*time.Millisecond, "not before the expiry")
	assert.LessOrEqual(t, redistest.Calls(t, f.rc, "zrange")-failed, int64(4), "woken by the expiry, not polling")
	n, err := s.AvailablePermits(f.base)
	require.NoError(t, err)
	assert.Equal(t, int64(1), n, "the other forgotten permit is back")
	ok, err := s.TryRelease(f.base, forgotten[0])
	require.NoError(t, err)
	assert.False(t, ok, "an expired permit is not held")
	require.NoError(t, s.Release(f.base, ids...))
	n, err = s.AvailablePermits(f.base)
	require.NoError(t, err)
	assert.Equal(t, int64(2), n)
}

// TestExpirableSemaphoreWakesByRelease: waiters sleep until a release, and a release of an
// id lets one of them through.
func TestExpirableSemaphoreWakesByRelease(t *testing.T) {
	f := newFixture(t, Options{})
	s := f.c.NewExpirableSemaphore(f.name)
	_, err := s.TrySetPermits(f.base, 2)
	require.NoError(t, err)
	held, err := s.Acquire(f.base, 2, 0)
	require.NoError(t, err)
	const waiters = 2
	var got atomic.Int32
	var wg sync.WaitGroup
	for range waiters {
		wg.Go(func() {
			ids, err := s.Acquire(f.base, 1, time.Minute)
			if assert.NoError(t, err) && assert.Len(t, ids, 1) {
				got.Add(1)
			}
		})
	}
	require.True(t, redistest.Poll(10*time.Second, time.Millisecond, func() bool {
		return redistest.NumSub(t, f.rc, s.channel) > 0
	}))
	require.NoError(t, s.Release(f.base, held[0]))
	require.True(t, redistest.Poll(10*time.Second, time.Millisecond, func() bool { return got.Load() == 1 }))
	require.NoError(t, s.Release(f.base, held[1]))
	wg.Wait()
	assert.Equal(t, int32(waiters), got.Load())
}

// TestExpirableSemaphoreNeverOverfull: owners that contend for leased permits, of one and of
// two at a time, are never more inside than there are permits, and every permit comes back.
func TestExpirableSemaphoreNeverOverfull(t *testing.T) {
	f := newFixture(t, Options{})
	s := f.c.NewExpirableSemaphore(f.name)
	const permits, owners, rounds = 3, 8, 15
	_, err := s.TrySetPermits(f.base, permits)
	require.NoError(t, err)
	var inside redistest.Occupancy
	var wg sync.WaitGroup
	for i := range owners {
		wg.Go(func() {
			n := int64(1 + i%2)
			for range rounds {
				ids, err := s.Acquire(f.base, n, time.Minute)
				if !assert.NoError(t, err) {
					return
				}
				leave := inside.Enter(n)
				_, err = s.AvailablePermits(f.base) // a round trip while inside
				assert.NoError(t, err)
				leave()
				assert.NoError(t, s.Release(f.base, ids...))
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

func TestExpirableSemaphoreErrors(t *testing.T) {
	f := newFixture(t, Options{})
	s := f.c.NewExpirableSemaphore(f.name)
	for _, n := range []int64{0, -1} {
		_, err := s.Acquire(f.base, n, 0)
		assert.ErrorIs(t, err, ErrInvalidPermits)
		assert.Contains(t, err.Error(), `rlock: Acquire "`+f.name+`": invalid permits`)
		_, err = s.TryAcquire(f.base, n, 0, 0)
		assert.ErrorIs(t, err, ErrInvalidPermits)
	}
	_, err := s.Acquire(f.base, 1, -time.Second)
	assert.ErrorIs(t, err, ErrInvalidLease)
	_, err = s.TryAcquire(f.base, 1, -time.Second, 0)
	assert.ErrorIs(t, err, ErrInvalidWait)
	_, err = s.TrySetPermits(f.base, -1)
	assert.ErrorIs(t, err, ErrInvalidPermits)
	assert.ErrorIs(t, s.AddPermits(f.base, 0), ErrInvalidPermits)
	assert.ErrorIs(t, s.AddPermits(f.base, math.MaxInt32+1), ErrInvalidPermits)
	for _, n := range []int64{1<<16 + 1, math.MaxInt64} { // each permit has an id made here
		_, err = s.Acquire(f.base, n, 0)
		assert.ErrorIs(t, err, ErrInvalidPermits)
		_, err = s.TryAcquire(f.base, n, 0, 0)
		assert.ErrorIs(t, err, ErrInvalidPermits)
	}
	assert.ErrorIs(t, s.Release(f.base), ErrInvalidPermits, "no id")
	const id = "00112233445566778899aabbccddeeff"
	for _, bad := range []string{"", "xyz", "0011", id + "00"} {
		assert.ErrorIs(t, s.Release(f.base, bad), ErrInvalidPermitID, "%q", bad)
		_, err = s.TryRelease(f.base, bad)
		assert.ErrorIs(t, err, ErrInvalidPermitID)
	}
	assert.ErrorIs(t, s.Release(f.base, id, id), ErrInvalidPermitID, "twice")
	assert.ErrorIs(t, s.Release(f.base, id), ErrPermitNotHeld)
	_, err = s.UpdateLeaseTime(f.base, id, -time.Second)
	assert.ErrorIs(t, err, ErrInvalidLease)
	_, err = f.c.NewExpirableSemaphore("").AvailablePermits(f.base)
	assert.ErrorIs(t, err, ErrEmptyName)

	short, cancel := context.WithTimeout(f.base, 30*time.Millisecond)
	defer cancel()
	_, err = s.Acquire(short, 1, 0)
	assert.ErrorIs(t, err, context.DeadlineExceeded)
	f.c.Close()
	_, err = s.AvailablePermits(f.base)
	assert.ErrorIs(t, err, ErrClosed)
}

// One call takes at most maxPermitIDs permits, what Redisson can reclaim at once.
func TestExpirableSemaphorePermitsPerCall(t *testing.T) {
	f := newFixture(t, Options{})
	s := f.c.NewExpirableSemaphore(f.name)
	_, err := s.TrySetPermits(f.base, maxPermitIDs+1)
	require.NoError(t, err)
	_, err = s.Acquire(f.base, maxPermitIDs+1, time.Minute)
	assert.ErrorIs(t, err, ErrInvalidPermits)
	_, err = s.TryAcquire(f.base, maxPermitIDs+1, time.Minute, 0)
	assert.ErrorIs(t, err, ErrInvalidPermits)
	ids, err := s.Acquire(f.base, maxPermitIDs, time.Minute)
	require.NoError(t, err)
	assert.Len(t, ids, maxPermitIDs)
	require.NoError(t, s.Release(f.base, ids...))
}
