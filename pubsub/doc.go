// Package pubsub is the waiting core of the lock types of this module: it turns Redisson's
// unlock messages into wake-ups, so that a blocked acquire sleeps until something is
// released instead of polling. Package rlock uses it; applications rarely need it directly,
// only to wait on a Redisson channel of an object this module does not implement.
//
// A Subscriber registers Waiters on channels. Each channel has one subscription per rueidis
// client, shared by the waiters of every Subscriber on that client, opened when the first
// waiter arrives and closed (UNSUBSCRIBE or SUNSUBSCRIBE, confirmed by the server) when the
// last one leaves.
//
// A client's subscriptions of one kind share one connection of their own (in a cluster,
// its sharded ones one connection per master, each channel on the master of its slot),
// kept by one goroutine: the channels that waiters open or leave while a round trip is on
// the wire go out together in the next, as SUBSCRIBE and UNSUBSCRIBE commands of many
// channels, and a waiting channel costs no goroutine of its own. 100,000 goroutines, each
// waiting on a lock of its own, take under 2 KB of heap each (docs/BENCHMARKS.md). In a
// cluster, classic subscriptions are on any one node, since every node forwards every
// PUBLISH; a sharded one moves when its slot moves to another master (the old master ends
// it) or a node answers MOVED. A master that hangs or fails holds up only the subscriptions
// routed to it: the round trip to each master runs on a goroutine of its own, and a failed
// node is tried again after pauses of its own.
//
// Each lock type states its wake rule when it subscribes: a Rule maps a message to the
// waiters it wakes (WakeN, WakeAll, WakeNone), and the waiters of one Subscriber on one
// channel are woken in arrival order, skipping those with a wake-up pending. LockRule is
// Redisson's rule for RLock and the read-write lock ("0" wakes one, "1" wakes all);
// SemaphoreRule wakes as many waiters as a semaphore's message says permits are available;
// LatchRule wakes every waiter on a countdown latch's "0" and none on its other messages.
// A fair lock would state its own: one channel per waiter, where any message wakes it. A wake-up
// that a closing Waiter received but did not consume passes to the next waiter.
//
// When a subscription's connection is lost, it is dialed again and the channels that have
// waiters are subscribed again; on the new confirmation every waiter of the channel is woken
// to re-check, since a message may have been published while no subscription existed. On a
// Sentinel client the same happens, without a loss, when the client moves to another master
// (checked every 500 ms): a replaced master that is still up may keep its connections for
// seconds, and the new master's messages never reach them. In a Redis Cluster, the sharded
// subscriptions on a master that the client drops from its view of the cluster (checked every
// 500 ms) move to the new master of their slots: a master that hangs closes nothing, and
// rueidis drops it on its next topology read (ClusterOption.ShardsRefreshInterval), or when
// it gives the connection up (ConnWriteTimeout). Waiters must still bound each wait by
// what they are waiting for (a lock holder's remaining TTL; Waiter.WaitAtMost takes that
// bound): pub/sub delivers at most once and only to connected subscribers. A bound ends its
// wait a little after it passes, by less than a 512th of it and at most 12.8 ms: the bounds
// that fall in one such grain share one timer, so that 100,000 waits keep a few hundred.
//
// Classic or sharded pub/sub: New takes the kinds to subscribe with, one subscription per
// kind, and Choose decides them for a lock client in a Redis Cluster, where the two kinds do
// not reach each other, together with the kinds its releases publish with: its waiters
// listen the ways other services may publish and its releases publish the ways any waiter may
// listen, with only the commands the servers have. Redisson subscribes with SSUBSCRIBE in a
// cluster whose servers support sharded pub/sub, unless its shardedSubscriptionMode is OFF,
// and with SUBSCRIBE everywhere else. A classic PUBLISH in a cluster is forwarded to
// every node; an SPUBLISH stays in the shard of the channel's slot.
package pubsub
