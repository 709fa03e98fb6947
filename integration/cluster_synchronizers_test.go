package integration

import (
	"strings"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/goredisson/goredisson/integration/javapeer"
	"github.com/goredisson/goredisson/internal/keys"
	"github.com/goredisson/goredisson/internal/redistest"
	"github.com/goredisson/goredisson/pubsub"
	"github.com/goredisson/goredisson/rlock"
)

// TestClusterInteropSynchronizers: on a Redis Cluster, with the Java peer in cluster mode
// (shardedSubscriptionMode AUTO, Redisson's default) and a Go client with the default
// Options, the countdown latch, the semaphore and the permit-expirable semaphore wake across
// languages both ways, on a plain name and on a name with its own hash tag served by another
// master (the latch: the plain name only).
func TestClusterInteropSynchronizers(t *testing.T) {
	cl := redistest.StartCluster(t)
	nodes := map[string]rueidis.Client{}
	for _, addr := range cl.Addrs() {
		nodes[addr] = cl.NodeClient(t, addr)
	}
	forEachVersion(t, func(t *testing.T, v string) {
		c := newClusterEnv(t, cl, nodes, v, "AUTO", rlock.Options{}, pubsub.Classic|pubsub.Sharded, &summary{})
		subscribed := func(t *testing.T, ch string) {
			t.Helper()
			var where string
			require.True(t, waitFor(10*time.Second, func() bool {
				s, cls, w := subCounts(t, nodes, ch)
				where = w
				return s+cls > 0
			}), "nobody subscribed to %s (%s)", ch, where)
		}
		unsubscribed := func(t *testing.T, ch string) {
			t.Helper()
			require.True(t, waitFor(10*time.Second, func() bool {
				s, cls, _ := subCounts(t, nodes, ch)
				return s+cls == 0
			}), "subscriptions to %s left over", ch)
		}
		java := func(t *testing.T, owner, cmd string, args ...string) string {
			t.Helper()
			return c.peer.Must(t, c.ctx, owner, cmd, args...)
		}

		t.Run("Latch", func(t *testing.T) {
			// The latch channel of a name with its own hash tag,
			// "redisson_countdownlatch__channel__{{tag}…}", hashes to another slot than the
			// name, and the latch scripts declare both as keys: Redis refuses Java's, and Go
			// refuses to send its own (ErrCrossSlot).
			names := c.names(t, "latch")
			tagged := names[1]
			r, err := c.peer.Do(c.ctx, "J0", "latch.setcount", tagged, "1")
			require.NoError(t, err)
			assert.False(t, r.OK, "Java on a tagged latch name")
			assert.Contains(t, r.Err, "CROSSSLOT")
			_, err = c.goc.NewCountDownLatch(tagged).TrySetCount(c.ctx, 1)
			assert.ErrorIs(t, err, rlock.ErrCrossSlot)
			assert.ErrorIs(t, c.goc.NewCountDownLatch(tagged).CountDown(c.ctx), rlock.ErrCrossSlot)
			for _, name := range names[:1] {
				l, ch := c.goc.NewCountDownLatch(name), keys.LatchChannel(name)
				// Go counts down, Java awaits.
				set, err := l.TrySetCount(c.ctx, 1)
				require.NoError(t, err)
				require.True(t, set)
				awaited := make(chan string, 1)
				go func() { awaited <- java(t, "J0", "latch.await", name, "30000") }()
				subscribed(t, ch)
				require.NoError(t, l.CountDown(c.ctx))
				assert.Equal(t, "true", <-awaited, name)
				unsubscribed(t, ch)
				// Java counts down, Go awaits.
				assert.Equal(t, "true", java(t, "J0", "latch.setcount", name, "1"))
				done := make(chan error, 1)
				go func() { done <- l.Await(c.ctx) }()
				subscribed(t, ch)
				java(t, "J0", "latch.countdown", name)
				assert.NoError(t, <-done, name)
			}
		})

		t.Run("Semaphore", func(t *testing.T) {
			for _, name := range c.names(t, "sem") {
				s, ch := c.goc.NewSemaphore(name), keys.SemaphoreChannel(name)
				acquired := make(chan error, 1)
				go func() { acquired <- s.Acquire(c.ctx, 1) }()
				subscribed(t, ch)
				java(t, "J0", "sem.release", name, "1")
				require.NoError(t, <-acquired, name)
				unsubscribed(t, ch)
				javaAcquired := make(chan string, 1)
				go func() { javaAcquired <- java(t, "J1", "sem.acquire", name, "1") }()
				subscribed(t, ch)
				require.NoError(t, s.Release(c.ctx, 1))
				assert.Equal(t, "true", <-javaAcquired, name)
			}
		})

		t.Run("ExpirableSemaphore", func(t *testing.T) {
			for _, name := range c.names(t, "xsem") {
				s, ch := c.goc.NewExpirableSemaphore(name), keys.SemaphoreChannel(name)
				assert.Equal(t, "true", java(t, "J0", "xsem.setpermits", name, "1"))
				jid := java(t, "J0", "xsem.acquire", name, "1", "60000")
				acquired := make(chan []string, 1)
				go func() {
					ids, err := s.Acquire(c.ctx, 1, time.Minute)
					assert.NoError(t, err)
					acquired <- ids
				}()
				subscribed(t, ch)
				java(t, "J0", "xsem.release", name, jid)
				gid := <-acquired
				require.Len(t, gid, 1, name)
				unsubscribed(t, ch)
				javaAcquired := make(chan string, 1)
				go func() { javaAcquired <- java(t, "J1", "xsem.acquire", name, "1", "60000") }()
				subscribed(t, ch)
				require.NoError(t, s.Release(c.ctx, gid...))
				jid = <-javaAcquired
				require.Len(t, jid, 32, name)
				require.NoError(t, s.Release(c.ctx, jid), "Go releases Java's permit")
				assert.Equal(t, "1", java(t, "J0", "xsem.available", name))
				assert.Equal(t, keys.Slot(name), keys.Slot(keys.PermitTimeouts(name)), "one slot")
				if javapeer.Has(v, javapeer.ExpirableSemaphoreMulti) {
					assert.False(t, strings.Contains(java(t, "J0", "xsem.acquired", name), "-"))
				}
			}
		})
	})
}
