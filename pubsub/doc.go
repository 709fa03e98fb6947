// Package pubsub shares one Redis subscription per unlock channel among every local waiter,
// and wakes waiters with Redisson's rules, so that a blocked acquire sleeps until the holder
// releases instead of polling.
//
// A Subscriber keeps, per channel, one subscription that is opened when the first local
// Waiter arrives and closed (UNSUBSCRIBE or SUNSUBSCRIBE, confirmed by the server) when the
// last one leaves. Messages are read as decimal integers, as Redisson publishes them:
//
//   - "0" wakes one waiter, the earliest arrived that has no wake-up pending;
//   - "1" wakes every waiter;
//   - any other payload is ignored.
//
// When the subscription connection is lost, the client reconnects and subscribes again; on
// the new confirmation every waiter is woken to re-check, since a release may have been
// published while no subscription existed. Waiters must still bound each wait by the
// holder's remaining TTL (Waiter.Wait takes that bound): pub/sub delivers at most once and
// only to connected subscribers.
//
// Classic or sharded pub/sub: New takes the choice. Redisson subscribes with SSUBSCRIBE in a
// Redis Cluster whose servers support sharded pub/sub (its AUTO mode) and with SUBSCRIBE
// everywhere else; package rlock makes the same choice and, in a cluster, publishes every
// release with both PUBLISH and SPUBLISH so that Java waiters of either mode wake.
package pubsub
