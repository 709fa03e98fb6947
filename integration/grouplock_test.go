package integration

import (
	"context"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/goredisson/goredisson/integration/javapeer"
	"github.com/goredisson/goredisson/internal/redistest"
	"github.com/goredisson/goredisson/rlock"
)

// groupLock is a MultiLock or a RedLock, as the interop test drives them.
type groupLock struct {
	tryLock func(ctx context.Context, wait time.Duration) error
	unlock  func(ctx context.Context) error
}

// TestInteropGroupLocks: Java's RedissonRedLock and RedissonMultiLock and Go's RedLock and
// MultiLock over the same five independent servers and lock name exclude each other and wake
// each other: a Go group waiting for a Java one acquires on its unlock and the reverse; then
// Go and Java owners increment a counter non-atomically under the group, and no increment
// is lost.
func TestInteropGroupLocks(t *testing.T) {
	forEachVersion(t, func(t *testing.T, v string) {
		jar := javapeer.JarPath(t, v)
		srvs := make([]*redistest.Server, 5)
		addrs := make([]string, len(srvs))
		rcs := make([]rueidis.Client, len(srvs))
		clients := make([]*rlock.Client, len(srvs))
		ctx := redistest.Context(t, 4*time.Minute)
		for i := range srvs {
			srvs[i] = redistest.StartProcess(t, redistest.ProcessOptions{})
			addrs[i] = "redis://" + srvs[i].Addr
			rcs[i] = srvs[i].Client(t)
			c, err := rlock.New(ctx, srvs[i].Client(t), rlock.Options{})
			require.NoError(t, err)
			t.Cleanup(c.Close)
			clients[i] = c
		}
		peer := javapeer.Start(t, jar, addrs[0], javapeer.WithGroup(addrs...))
		for _, kind := range []string{"redlock", "multilock"} {
			t.Run(kind, func(t *testing.T) {
				name := "interopGroup:" + kind
				channel := "redisson_lock__channel:{" + name + "}"
				locks := make([]*rlock.Lock, len(clients))
				for i, c := range clients {
					locks[i] = c.NewLock(name)
				}
				g := newGroupLock(t, kind, locks)
				waiting := func(what string) {
					t.Helper()
					require.True(t, redistest.Poll(30*time.Second, time.Millisecond, func() bool {
						return redistest.NumSub(t, rcs[0], channel) > 0
					}), "%s waits on the first server's channel", what)
				}
				goOwner := rlock.NewOwner(ctx)

				// Java holds; Go is excluded, waits, and is woken by Java's unlock.
				assert.Equal(t, "true", peer.Must(t, ctx, "J1", kind+".lock", name))
				assert.ErrorIs(t, g.tryLock(goOwner, 0), rlock.ErrLocked)
				acquired := make(chan error, 1)
				go func() { acquired <- g.tryLock(goOwner, time.Minute) }()
				waiting("Go")
				peer.Must(t, ctx, "J1", kind+".unlock", name)
				require.NoError(t, <-acquired, "Go acquires on Java's unlock")
				held := 0
				for _, l := range locks {
					if h, err := l.IsHeld(goOwner); err == nil && h {
						held++
					}
				}
				assert.GreaterOrEqual(t, held, map[string]int{"redlock": 3, "multilock": 5}[kind])

				// Go holds; Java is excluded, waits, and is woken by Go's unlock.
				assert.Equal(t, "false", peer.Must(t, ctx, "J2", kind+".trylock", name, "0", "-1"))
				javaAcquired := make(chan string, 1)
				go func() { javaAcquired <- peer.Must(t, ctx, "J2", kind+".lock", name) }()
				waiting("Java")
				require.NoError(t, g.unlock(goOwner))
				assert.Equal(t, "true", <-javaAcquired, "Java acquires on Go's unlock")
				if javapeer.Has(v, javapeer.GroupIsHeld) {
					assert.Equal(t, "true", peer.Must(t, ctx, "J2", kind+".isheld", name))
				}
				peer.Must(t, ctx, "J2", kind+".unlock", name)

				// Both sides increment a counter on the first server, GET then SET, under the group.
				counter := name + ":count"
				const rounds = 6
				var wg sync.WaitGroup
				for _, j := range []string{"J3", "J4"} {
					wg.Go(func() {
						for range rounds {
							peer.Must(t, ctx, j, kind+".lock", name)
							peer.Must(t, ctx, j, "incr", counter)
							peer.Must(t, ctx, j, kind+".unlock", name)
						}
					})
				}
				for range 2 {
					wg.Go(func() {
						owner := rlock.NewOwner(ctx)
						for range rounds {
							if !assert.NoError(t, g.tryLock(owner, time.Minute)) {
								return
							}
							v, err := rcs[0].Do(ctx, rcs[0].B().Get().Key(counter).Build()).AsInt64()
							if rueidis.IsRedisNil(err) {
								err = nil
							}
							assert.NoError(t, err)
							assert.NoError(t, rcs[0].Do(ctx, rcs[0].B().Set().Key(counter).Value(strconv.FormatInt(v+1, 10)).Build()).Error())
							assert.NoError(t, g.unlock(owner))
						}
					})
				}
				wg.Wait()
				n, err := rcs[0].Do(ctx, rcs[0].B().Get().Key(counter).Build()).AsInt64()
				require.NoError(t, err)
				assert.Equal(t, int64(4*rounds), n, "no increment lost: the sides excluded each other")
				for i, rc := range rcs {
					assert.False(t, redistest.Exists(t, rc, name), "released on server %d", i)
				}
			})
		}
	})
}

// newGroupLock returns Go's group of kind over locks.
func newGroupLock(t *testing.T, kind string, locks []*rlock.Lock) groupLock {
	t.Helper()
	if kind == "redlock" {
		r, err := rlock.NewRedLock(locks...)
		require.NoError(t, err)
		return groupLock{
			tryLock: func(ctx context.Context, wait time.Duration) error { _, err := r.TryLock(ctx, wait, 0); return err },
			unlock:  r.Unlock,
		}
	}
	m, err := rlock.NewMultiLock(locks...)
	require.NoError(t, err)
	return groupLock{
		tryLock: func(ctx context.Context, wait time.Duration) error { return m.TryLock(ctx, wait, 0) },
		unlock:  m.Unlock,
	}
}
