package integration

import (
	"context"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/goredisson/goredisson/internal/redistest"
	"github.com/goredisson/goredisson/internal/redistest/rlocktest"
	"github.com/goredisson/goredisson/pubsub"
	"github.com/goredisson/goredisson/rlock"
)

// TestClusterInteropReadWrite: the read-write lock on a Redis Cluster (3 masters, 3
// replicas), with the Java peer in cluster mode (shardedSubscriptionMode AUTO: SSUBSCRIBE
// and SPUBLISH) and the Go client with its defaults (both kinds of pub/sub, replica sync on
// every lock write). On a plain name and on a name with its own hash tag, served by
// different masters: a Java writer's release wakes Go readers and a Go writer's release wakes
// a Java reader, well under the 30 s watchdog lease; and a Go reader with a 1 s watchdog keeps
// its timeout keys alive through the cluster's renewal calls (one slot per call, followed by
// WAIT), so that a Java reader leaving after several of those leases leaves the lock held.
func TestClusterInteropReadWrite(t *testing.T) {
	cl := redistest.StartCluster(t)
	nodes := map[string]rueidis.Client{}
	for _, addr := range cl.Addrs() {
		nodes[addr] = cl.NodeClient(t, addr)
	}
	sum := &summary{}
	forEachVersion(t, func(t *testing.T, v string) {
		c := newClusterEnv(t, cl, nodes, v, "AUTO", rlock.Options{}, pubsub.Classic|pubsub.Sharded, sum)
		e := c.env(t)
		wokenBy := func(t *testing.T, name, what string, start func() []<-chan acquired, release func(), javaOwners ...string) {
			t.Helper()
			tries := func() int64 { return c.failedTries(t, name) }
			subscribed := func() bool {
				s, cls, _ := subCounts(t, c.nodes, rwChannelOf(name))
				return s+cls >= 1
			}
			wokenAfter(t, tries, subscribed, javaParked(t, c.peer, javaOwners...), what, start, release)
		}
		short := rlocktest.NewClient(t, cl.Client(t), rlock.Options{WatchdogTimeout: time.Second})
		for _, name := range c.names(t, "rw") {
			t.Run(name, func(t *testing.T) {
				l := c.goc.NewReadWriteLock(name)
				r, w := l.ReadLock(), l.WriteLock()

				e.peer.Must(t, e.ctx, "J", "write.lock", name)
				g1, g2 := rlock.NewOwner(e.ctx), rlock.NewOwner(e.ctx)
				wokenBy(t, name, "Go reader woken by Java's write release",
					waiting(goWaiter(func() error { return r.Lock(g1) }), goWaiter(func() error { return r.Lock(g2) })),
					func() { e.peer.Must(t, e.ctx, "J", "write.unlock", name) })
				require.NoError(t, r.Unlock(g1))
				require.NoError(t, r.Unlock(g2))
				sum.add("%s %s: Java write release → Go readers", v, name)

				require.NoError(t, w.Lock(g1))
				wokenBy(t, name, "Java reader woken by Go's write release", waiting(e.javaWaiter("J", "read.lock", name)),
					func() { require.NoError(t, w.Unlock(g1)) }, "J")
				e.peer.Must(t, e.ctx, "J", "read.unlock", name)

				sr := short.NewReadWriteLock(name).ReadLock()
				require.NoError(t, sr.Lock(g2))
				e.peer.Must(t, e.ctx, "J", "read.lock", name, "60000")
				start := time.Now()
				require.True(t, waitFor(20*time.Second, func() bool { return time.Since(start) > 3*time.Second }))
				e.peer.Must(t, e.ctx, "J", "read.unlock", name)
				h := redistest.HGetAll(t, c.rc, name)
				assert.Equal(t, map[string]string{"mode": "read", ownerField(short, g2): "1"}, h,
					"Java's release leaves the Go reader, whose timeout key the cluster renewal kept")
				require.NoError(t, sr.Unlock(g2))
				assert.Empty(t, redistest.HGetAll(t, c.rc, name))
			})
		}
	})
	t.Logf("cluster read-write interop:\n%s", sum)
}

// ownerField returns the hash field that ctx's owner writes through client c.
func ownerField(c *rlock.Client, ctx context.Context) string {
	o, ok := rlock.OwnerFrom(ctx)
	if !ok {
		panic("ownerField: ctx carries no owner")
	}
	return c.ID() + ":" + o.String()
}
