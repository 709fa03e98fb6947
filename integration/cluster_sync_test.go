package integration

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/goredisson/goredisson/internal/redistest"
	"github.com/goredisson/goredisson/internal/redistest/rlocktest"
	"github.com/goredisson/goredisson/rlock"
)

// TestClusterReplicaSync checks Redisson's default replica sync on a Cluster client (the
// default Options): the WAIT after a lock script runs on the master of the lock's slot, so
// that master's replica has the write when the call returns and no other master sees a
// WAIT; renewals of locks on several masters wait on each of them; and with one master's
// replica unable to acknowledge (CLIENT PAUSE WRITE), an acquire on that master fails with
// ErrNotReplicated and leaves nothing held, while locks on the other masters work.
func TestClusterReplicaSync(t *testing.T) {
	cl := redistest.StartCluster(t)
	ctx, cancel := within(context.Background(), 60*time.Second)
	defer cancel()
	c := rlocktest.NewClient(t, cl.Client(t), rlock.Options{WatchdogTimeout: 900 * time.Millisecond})
	nodes := map[string]rueidis.Client{}
	for _, addr := range cl.Addrs() {
		nodes[addr] = cl.NodeClient(t, addr)
	}
	waits := func() map[string]int64 {
		out := map[string]int64{}
		for addr, nc := range nodes {
			n, err := redistest.CommandCalls(ctx, nc, "wait")
			require.NoError(t, err, addr)
			out[addr] = n
		}
		return out
	}
	const name = "sync:cluster"
	target := cl.MasterOf(t, name)
	replica := nodes[cl.ReplicaOf(t, target)]
	var other string
	for i := 0; other == ""; i++ {
		if n := fmt.Sprintf("sync:cluster:other:%d", i); cl.MasterOf(t, n) != target {
			other = n
		}
	}
	t.Logf("%q on %s, %q on %s", name, target, other, cl.MasterOf(t, other))

	// Synced acquires that arrive together on a new Client, before it has read the slot
	// map, wait for that read and go in the masters' batches, instead of each taking a
	// dedicated connection (which rueidis keeps, with 1 MB of buffers, in its pool).
	t.Run("BurstBeforeTheSlotMap", func(t *testing.T) {
		connections := func() int {
			n := 0
			for addr, nc := range nodes {
				list, err := nc.Do(ctx, nc.B().ClientList().Build()).ToString()
				require.NoError(t, err, addr)
				n += len(redistest.ParseClientList(list))
			}
			return n
		}
		before := connections()
		bc := rlocktest.NewClient(t, cl.Client(t), rlock.Options{})
		const owners = 256
		errs := make(chan error, owners)
		var wg sync.WaitGroup
		for i := range owners {
			wg.Go(func() { errs <- bc.NewLock(fmt.Sprintf("sync:burst:%d", i)).Lock(rlock.NewOwner(ctx)) })
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			require.NoError(t, err)
		}
		opened := connections() - before
		t.Logf("%d concurrent Locks on a new Client opened %d connections", owners, opened)
		// The client's own connection to each node, at most maxBatches (4) batch connections
		// per master, and a few for naming and probing.
		assert.LessOrEqual(t, opened, 6+3*4+6, "connections opened by %d concurrent Locks", owners)
	})

	t.Run("WaitOnTheSlotMaster", func(t *testing.T) {
		l := c.NewLock(name)
		owner := rlock.NewOwner(ctx)
		// Once before counting, so that the scripts are cached: a NOSCRIPT reply resends the
		// script with EVAL, and its WAIT with it.
		require.NoError(t, l.Lock(owner))
		require.NoError(t, l.Unlock(owner))
		before := waits()
		require.NoError(t, l.Lock(owner))
		rs := replica.DoMulti(ctx, replica.B().Readonly().Build(), replica.B().Hgetall().Key(name).Build())
		h, err := rs[1].AsStrMap()
		require.NoError(t, err)
		assert.Len(t, h, 1, "the replica has the hold when Lock returns")
		require.NoError(t, l.Unlock(owner))
		after := waits()
		for addr := range nodes {
			if addr == target {
				assert.Equal(t, int64(2), after[addr]-before[addr], "one WAIT per write on %s", addr)
			} else {
				assert.Equal(t, before[addr], after[addr], "no WAIT on %s", addr)
			}
		}
	})

	t.Run("RenewalOnEachMaster", func(t *testing.T) {
		owner := rlock.NewOwner(ctx)
		var locks []*rlock.Lock
		for _, n := range []string{name, other} {
			l := c.NewLock(n)
			require.NoError(t, l.Lock(owner))
			locks = append(locks, l)
		}
		masters := []string{target, cl.MasterOf(t, other)}
		before := waits()
		require.True(t, waitFor(5*time.Second, func() bool {
			after := waits()
			return after[masters[0]]-before[masters[0]] >= 2 && after[masters[1]]-before[masters[1]] >= 2
		}), "renewals wait on both masters")
		for _, l := range locks {
			require.NoError(t, l.Unlock(owner))
		}
	})

	t.Run("ReplicaPaused", func(t *testing.T) {
		require.NoError(t, replica.Do(ctx, replica.B().ClientPause().Timeout(30000).Write().Build()).Error())
		defer func() {
			assert.NoError(t, replica.Do(context.Background(), replica.B().ClientUnpause().Build()).Error())
		}()
		owner := rlock.NewOwner(ctx)
		l := c.NewLock(name)
		require.ErrorIs(t, l.Lock(owner), rlock.ErrNotReplicated)
		locked, err := l.IsLocked(ctx)
		require.NoError(t, err)
		assert.False(t, locked, "every try given back")
		o := c.NewLock(other)
		require.NoError(t, o.Lock(owner), "another master's replica confirms")
		require.NoError(t, o.Unlock(owner))
	})

	// After a graceful CLUSTER FAILOVER the client still sends the slot's calls to the old
	// master, which answers MOVED: the call is sent again to the new master, on a connection
	// of its own, and waited for there.
	t.Run("MovedAfterFailover", func(t *testing.T) {
		promoted := cl.ReplicaOf(t, target)
		moved := func() int64 {
			info, err := nodes[target].Do(ctx, nodes[target].B().Info().Section("errorstats").Build()).ToString()
			require.NoError(t, err)
			_, rest, _ := strings.Cut(info, "errorstat_MOVED:count=")
			n, _ := strconv.ParseInt(strings.TrimSpace(strings.SplitN(rest, "\r\n", 2)[0]), 10, 64)
			return n
		}
		movedBefore := moved()
		cl.Failover(t, promoted, false)
		before := waits()
		l := c.NewLock(name)
		owner := rlock.NewOwner(ctx)
		begin := time.Now()
		require.NoError(t, l.Lock(owner))
		assert.Positive(t, moved()-movedBefore, "the old master answered MOVED")
		t.Logf("Lock after the failover took %v", time.Since(begin).Round(time.Millisecond))
		assert.Positive(t, waits()[promoted]-before[promoted], "WAIT on the new master")
		old := nodes[target]
		rs := old.DoMulti(ctx, old.B().Readonly().Build(), old.B().Hgetall().Key(name).Build())
		h, err := rs[1].AsStrMap()
		require.NoError(t, err)
		assert.Len(t, h, 1, "the new master's replica (the old master) has the hold when Lock returns")
		require.NoError(t, l.Unlock(owner))
	})
}
