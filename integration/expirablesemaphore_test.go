package integration

import (
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/goredisson/goredisson/integration/javapeer"
	"github.com/goredisson/goredisson/internal/redistest"
	"github.com/goredisson/goredisson/rlock"
)

// TestInteropExpirableSemaphore: Go and Java share one permit-expirable semaphore: each
// reads and releases the permit ids the other acquired, a release on one side wakes an
// acquirer on the other, permits forgotten by one side come back to the other at their
// expiry, and Go and Java owners together are never more inside than there are permits.
func TestInteropExpirableSemaphore(t *testing.T) {
	forEachVersion(t, func(t *testing.T, v string) {
		e := newEnv(t, v, 0)
		const name, counter, permits = "interopXSem:sem", "interopXSem:inside", 2
		s := e.goc.NewExpirableSemaphore(name)
		java := func(cmd string, args ...string) string {
			t.Helper()
			return e.peer.Must(t, e.ctx, "J0", "xsem."+cmd, append([]string{name}, args...)...)
		}
		// javaTake acquires n permits for owner: in one call, or one call per permit before
		// Redisson 3.23.4 (its acquire takes one); cmd is acquire or tryacquire, args follow N.
		multi := javapeer.Has(v, javapeer.ExpirableSemaphoreMulti)
		javaTake := func(owner, cmd string, n int, args ...string) []string {
			t.Helper()
			if multi {
				ids := e.peer.Must(t, e.ctx, owner, "xsem."+cmd, append([]string{name, fmt.Sprint(n)}, args...)...)
				return strings.Split(ids, ",")
			}
			var ids []string
			for range n {
				ids = append(ids, e.peer.Must(t, e.ctx, owner, "xsem."+cmd, append([]string{name, "1"}, args...)...))
			}
			return ids
		}
		javaRelease := func(ids ...string) {
			t.Helper()
			if multi {
				java("release", strings.Join(ids, ","))
				return
			}
			for _, id := range ids {
				java("release", id)
			}
		}
		leaseTime := javapeer.Has(v, javapeer.ExpirableSemaphoreLeaseTime)
		subscribed := func() { t.Helper(); requireSubscribed(t, e.rc, "redisson_sc:{"+name+"}") }
		available := func() int64 {
			t.Helper()
			n, err := s.AvailablePermits(e.ctx)
			require.NoError(t, err)
			return n
		}

		assert.Equal(t, "true", java("setpermits", fmt.Sprint(permits)))
		set, err := s.TrySetPermits(e.ctx, 5)
		require.NoError(t, err)
		assert.False(t, set, "Java set the permits")
		assert.Equal(t, int64(permits), available())

		// Ids are shared: Go reads and releases a permit Java acquired, and Java one Go did.
		jid := javaTake("J0", "acquire", 1, "60000")[0]
		require.Len(t, jid, 32, "Java shows 16 bytes as 32 hex digits")
		lease, expires, err := s.LeaseTime(e.ctx, jid)
		require.NoError(t, err)
		assert.True(t, expires)
		assert.InDelta(t, time.Minute, lease, float64(10*time.Second))
		ok, err := s.UpdateLeaseTime(e.ctx, jid, 0)
		require.NoError(t, err)
		assert.True(t, ok)
		if leaseTime {
			assert.Equal(t, "-1", java("lease", jid), "Go made it never expire")
		}
		require.NoError(t, s.Release(e.ctx, jid))
		if multi {
			assert.Equal(t, "0", java("acquired"))
		}
		gids, err := s.Acquire(e.ctx, 2, time.Minute)
		require.NoError(t, err)
		if leaseTime {
			ms, err := strconv.ParseInt(java("lease", gids[0]), 10, 64)
			require.NoError(t, err)
			assert.InDelta(t, time.Minute.Milliseconds(), ms, 10_000)
		}
		javaRelease(gids...)
		assert.Equal(t, int64(permits), available())
		err = s.Release(e.ctx, gids[0])
		assert.ErrorIs(t, err, rlock.ErrPermitNotHeld, "Java released it")
		r, err := e.peer.Do(e.ctx, "J0", "xsem.release", name, jid)
		require.NoError(t, err)
		assert.False(t, r.OK, "Go released it") // Redisson wraps its IllegalArgumentException in a RedisException

		// A Java release wakes a Go acquirer.
		jids := javaTake("J0", "acquire", 2, "-1")
		require.Len(t, jids, 2)
		acquired := make(chan []string, 1)
		go func() {
			ids, err := s.Acquire(e.ctx, 1, 0)
			assert.NoError(t, err)
			acquired <- ids
		}()
		subscribed()
		java("release", jids[0])
		gid := <-acquired
		require.Len(t, gid, 1)

		// A Go release wakes a Java acquirer.
		javaAcquired := make(chan string, 1)
		go func() { javaAcquired <- e.peer.Must(t, e.ctx, "J1", "xsem.acquire", name, "1", "-1") }()
		subscribed()
		require.NoError(t, s.Release(e.ctx, gid...))
		jid = <-javaAcquired
		assert.Len(t, jid, 32)
		javaRelease(jids[1], jid)
		assert.Equal(t, int64(permits), available())

		// Permits Java forgot come back to a Go waiter at their expiry, and the reverse:
		// nobody publishes an expiry, each waiter wakes on its own.
		javaTake("J0", "acquire", 2, "500")
		start := time.Now()
		gid, err = s.Acquire(e.ctx, 2, 500*time.Millisecond)
		require.NoError(t, err)
		assert.GreaterOrEqual(t, time.Since(start), 400*time.Millisecond, "not before the expiry")
		start = time.Now()
		jids = javaTake("J1", "tryacquire", 2, "30000", "-1")
		require.Len(t, jids, 2, "Java got the permits Go forgot")
		assert.GreaterOrEqual(t, time.Since(start), 300*time.Millisecond, "not before the expiry")
		ok, err = s.TryRelease(e.ctx, gid[0])
		require.NoError(t, err)
		assert.False(t, ok, "Go's permit expired")
		javaRelease(jids...)

		// Go and Java owners share the permits.
		const owners, rounds = 3, 15
		var most redistest.Peak
		var wg sync.WaitGroup
		for i := range owners {
			wg.Go(func() {
				for range rounds {
					ids, err := s.Acquire(e.ctx, 1, time.Minute)
					if !assert.NoError(t, err) {
						return
					}
					v, err := e.rc.Do(e.ctx, e.rc.B().Incr().Key(counter).Build()).AsInt64()
					assert.NoError(t, err)
					most.Note(v)
					assert.NoError(t, e.rc.Do(e.ctx, e.rc.B().Decr().Key(counter).Build()).Error())
					assert.NoError(t, s.Release(e.ctx, ids...))
				}
			})
			wg.Go(func() {
				owner := fmt.Sprintf("Jxsem%d", i)
				for range rounds {
					v, err := strconv.ParseInt(e.peer.Must(t, e.ctx, owner, "xsem.inside", name, counter, "60000"), 10, 64)
					assert.NoError(t, err)
					most.Note(v)
				}
			})
		}
		wg.Wait()
		assert.LessOrEqual(t, most.Load(), int64(permits), "never more inside than permits")
		assert.Equal(t, fmt.Sprint(permits), java("available"), "every permit came back")
		if multi {
			assert.Equal(t, "0", java("acquired"))
		}
	})
}

// TestInteropExpirablePermitsReclaimed: a Go call takes the most permits one call may (5,000)
// with a short lease and forgets them; once they expire, a Java acquire reclaims them all in
// one call (Redisson reclaims every expired permit in one Lua unpack, which fails from about
// 8,000) and gets its permit.
func TestInteropExpirablePermitsReclaimed(t *testing.T) {
	forEachVersion(t, func(t *testing.T, v string) {
		javapeer.Need(t, v, javapeer.ExpirableSemaphoreMulti)
		e := newEnv(t, v, 0)
		const name, n = "interopXSem:reclaim", 5000
		s := e.goc.NewExpirableSemaphore(name)
		_, err := s.TrySetPermits(e.ctx, n)
		require.NoError(t, err)
		ids, err := s.Acquire(e.ctx, n, 300*time.Millisecond)
		require.NoError(t, err)
		require.Len(t, ids, n)
		_, err = s.Acquire(e.ctx, n+1, time.Second)
		require.ErrorIs(t, err, rlock.ErrInvalidPermits, "one call takes at most 5,000")
		require.True(t, redistest.Poll(10*time.Second, 20*time.Millisecond, func() bool {
			min, err := e.rc.Do(e.ctx, e.rc.B().Zrange().Key("{"+name+"}:timeout").Min("0").Max("0").Withscores().Build()).AsZScores()
			return err == nil && len(min) == 1 && int64(min[0].Score) < time.Now().UnixMilli()
		}), "the permits expired")
		jid := e.peer.Must(t, e.ctx, "J", "xsem.tryacquire", name, "1", "5000", "60000")
		require.Len(t, strings.Split(jid, ","), 1, "Java reclaimed the expired permits and took one")
		e.peer.Must(t, e.ctx, "J", "xsem.release", name, jid)
		avail, err := s.AvailablePermits(e.ctx)
		require.NoError(t, err)
		assert.Equal(t, int64(n), avail, "every permit back")
	})
}
