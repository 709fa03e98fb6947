package integration

// Redis Sentinel test of rlock on a loopback deployment (redistest.StartSentinel: 1 master,
// 2 replicas, 3 sentinels, quorum 2, down-after 1000 ms): the fast form of F10 (docs/SCENARIOS.md).

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/goredisson/goredisson/internal/redistest"
	"github.com/goredisson/goredisson/rlock"
)

// numSub returns PUBSUB NUMSUB of ch on one node.
func numSub(t *testing.T, nc rueidis.Client, ch string) int64 {
	t.Helper()
	ctx, cancel := within(context.Background(), 2*time.Second)
	defer cancel()
	m, err := nc.Do(ctx, nc.B().PubsubNumsub().Channel(ch).Build()).AsIntMap()
	if err != nil {
		return -1 // the node may be down
	}
	return m[ch]
}

// TestSentinelF10KillMaster is the fast form of F10: 5 goroutines on two sentinel clients
// lock (10 s lease) and unlock 20 names every 50 ms; the master is SIGKILLed and the
// sentinels promote a replica. No operation may hang, errors are allowed only in the
// failover window, and the loops succeed again after it, each worker's last operation ok.
// Alongside, a waiter blocked during the failover resubscribes on the new master and
// acquires after the holder's unlock there.
func TestSentinelF10KillMaster(t *testing.T) {
	const lease = 10 * time.Second
	s := redistest.StartSentinel(t)
	ctx, cancel := within(context.Background(), 90*time.Second)
	defer cancel()
	a := newLockClient(t, s.Client(t), rlock.Options{})
	b := newLockClient(t, s.Client(t), rlock.Options{})
	master := s.MasterAddr(t)
	names := make([]string, 20)
	for i := range names {
		names[i] = fmt.Sprintf("f10:lock:%d", i)
	}

	// A holder with an explicit lease and a waiter on the other client, blocked on its
	// subscription on the master when the master dies.
	const handoff = "f10:handoff"
	ch := lockChannelOf(handoff)
	h := startFailoverHandoff(t, ctx, a, b, handoff, 15*time.Second)
	oldNode := s.NodeClient(t, master)
	require.True(t, waitFor(5*time.Second, func() bool { return numSub(t, oldNode, ch) == 1 }),
		"waiter not subscribed to %s on %s", ch, master)

	ld := startLoad(t, loadConfig{
		workers:   5,
		names:     names,
		clients:   []*rlock.Client{a, b},
		acquire:   func(ctx context.Context, l *rlock.Lock) error { return l.LockFor(ctx, lease) },
		opTimeout: 12 * time.Second, // beyond the lease: waiting out an orphaned hold is no error
		hold:      2 * time.Millisecond,
		every:     50 * time.Millisecond,
	})
	time.Sleep(time.Second)

	killAt := time.Now()
	old := s.KillMaster(t)
	require.Equal(t, master, old)
	promoted := s.WaitFailover(t, old)
	recoveredAt := time.Now()
	t.Logf("kill -9 %s: sentinels promoted %s %v later", old, promoted, recoveredAt.Sub(killAt).Round(time.Millisecond))
	// The clients learn the new master from the sentinels a moment later (about 1 s after
	// all three name it, in the runs seen here).
	windowEnd := recoveredAt.Add(3 * time.Second)

	// The waiter resubscribes on the new master; the holder's unlock there wakes it.
	newNode := s.NodeClient(t, promoted)
	resub := waitFor(10*time.Second, func() bool { return numSub(t, newNode, ch) == 1 })
	t.Logf("waiter resubscribed on %s: %v (%v after the kill)", promoted, resub, time.Since(killAt).Round(time.Millisecond))
	assert.True(t, resub, "waiter's subscription not restored on the new master")
	h.release(t)

	ld.waitSuccessesAfter(t, windowEnd, 3, 20*time.Second)
	ld.finish(t)
	t.Logf("F10 kill -9: %s", ld.check(t, killAt, windowEnd))
}

// TestSentinelReplicaAck acquires with Options.ReplicaAck on a master with two replicas:
// the WAIT is acknowledged and the hold kept (the no-replica case is
// rlock.TestReplicaAckWithoutReplicaUndoesHold; the failover case faults.TestF9...).
func TestSentinelReplicaAck(t *testing.T) {
	s := redistest.StartSentinel(t)
	ctx, cancel := within(context.Background(), 30*time.Second)
	defer cancel()
	c := newLockClient(t, s.Client(t), rlock.Options{ReplicaAck: time.Second})
	l := newLock(t, c, "replica-ack")
	owner := rlock.NewOwner(ctx)
	require.NoError(t, l.Lock(owner), "two replicas acknowledge the acquisition")
	held, err := l.IsHeld(owner)
	require.NoError(t, err)
	assert.True(t, held)
	require.NoError(t, l.Unlock(owner))
}
