package rlock

import (
	"fmt"
	"log/slog"
	"time"
)

// Defaults used for zero Options fields. They are Redisson's where Redisson has one.
const (
	// DefaultWatchdogTimeout is the lease of a lock taken without one; the watchdog renews
	// it every third of this (Redisson's lockWatchdogTimeout).
	DefaultWatchdogTimeout = 30 * time.Second
	// DefaultRenewBatchSize is the number of locks one renewal call renews at most
	// (Redisson's lockWatchdogBatchSize).
	DefaultRenewBatchSize = 100
	// DefaultUnlockLatchTTL is how long an unlock request's result is kept for retries of the
	// same request (Redisson keeps it 16-20 s with its defaults).
	DefaultUnlockLatchTTL = 20 * time.Second
	// DefaultReleaseTimeout bounds the releases that run without the caller's cancellation:
	// Unlock with an ended ctx, and giving back a hold taken after the caller gave up.
	DefaultReleaseTimeout = 5 * time.Second
	// DefaultReplicaSyncTimeout is how long each WAIT for replicas blocks at most
	// (Redisson's slavesSyncTimeout).
	DefaultReplicaSyncTimeout = time.Second
	// DefaultFairLockWaitTimeout is the thread-wait time of a fair lock's waiters when
	// TryLock gives no positive wait (Redisson's fairLockWaitTimeout, 5 minutes since
	// Redisson 3.13.3): each queued waiter's deadline is the one before it plus this.
	DefaultFairLockWaitTimeout = 5 * time.Minute
)

// minWatchdogTimeout is the shortest WatchdogTimeout: below it the safety margin taken off
// each lease (1% plus 10 ms, see Lock.Held) would leave nothing.
const minWatchdogTimeout = 50 * time.Millisecond

// PubSubMode chooses how the Client's waiters subscribe to unlock messages: classic
// (SUBSCRIBE/PUBLISH) or sharded (SSUBSCRIBE/SPUBLISH) pub/sub. It matters only with a Redis
// Cluster client, where the two kinds do not reach each other: Redisson uses classic pub/sub
// on every other topology, and so does rlock. Releases are published the ways that the
// Client's waiters and, per JavaPubSub, the Java services' waiters listen, with only the
// commands the servers have: in a cluster, New asks the server once which of SPUBLISH,
// SSUBSCRIBE, PUBLISH and SUBSCRIBE it has. Every Go service on the same lock names is
// assumed to use the same PubSub and JavaPubSub.
type PubSubMode int

const (
	// PubSubAuto listens the ways the Java services publish and publishes the ways they
	// listen, with sharded pub/sub where the servers have it (Redis 7+) and classic
	// elsewhere. With the default JavaPubSubUnknown, in a cluster with sharded pub/sub, its
	// waiters subscribe both ways and its releases are published both ways, so that Java
	// services of any shardedSubscriptionMode wake and are heard; a Go release then reaches
	// a Go waiter twice, and the second message only makes one more waiter try once more.
	PubSubAuto PubSubMode = iota
	// PubSubSharded always subscribes with SSUBSCRIBE in a cluster; New fails with a
	// cluster that lacks sharded pub/sub.
	PubSubSharded
	// PubSubClassic always subscribes with SUBSCRIBE.
	PubSubClassic
)

// JavaPubSub tells a Client how the Java Redisson services that lock the same names
// subscribe in a Redis Cluster (Redisson's shardedSubscriptionMode, since 3.29.0), so that
// releases are published only the ways some waiter listens. In a cluster, every classic
// PUBLISH is forwarded over the cluster bus to every node, whether or not any client there
// subscribes; an SPUBLISH reaches only the shard of the channel's slot. It matters only with
// a Redis Cluster client.
type JavaPubSub int

const (
	// JavaPubSubUnknown: Java services may subscribe either way. Releases are published
	// with both SPUBLISH and PUBLISH, and PubSubAuto waiters subscribe both ways.
	JavaPubSubUnknown JavaPubSub = iota
	// JavaPubSubAuto: every Java service uses a cluster config with shardedSubscriptionMode
	// AUTO (Redisson's default) or ON, or a Redisson from 3.22.0 to 3.28: SSUBSCRIBE and
	// SPUBLISH where the servers have sharded pub/sub, SUBSCRIBE and PUBLISH elsewhere.
	JavaPubSubAuto
	// JavaPubSubClassic: Java services use shardedSubscriptionMode OFF, a single-server
	// config pointed at a cluster node, or a Redisson before 3.22.0: SUBSCRIBE and PUBLISH.
	JavaPubSubClassic
	// JavaPubSubNone: no Java service locks these names.
	JavaPubSubNone
)

// ReplicaSyncMode chooses whether lock writes wait for the master's replicas, as Redisson's
// checkLockSyncedSlaves does.
//
// With sync on, every acquire, unlock, force-unlock and renewal script is followed, on the
// same connection, by WAIT <replicas> <ReplicaSyncTimeout>, where <replicas> is the number
// of replicas connected to the master that ran the script (read from INFO replication and
// kept per master, or per hash slot in a cluster, for at most 10 s, and read again when a
// WAIT reports another number or after a script call failed). A master without
// replicas gets no WAIT and no extra round trip. Acquisitions, force-unlocks, semaphore
// writes and renewals made at once on one master share a connection and a WAIT: those that
// arrive while one batch is on its way go together in the next. A write counts as confirmed when at least
// one replica has it; one that no replica confirmed in time is handled per operation:
//
//   - an acquisition is given back (the release script) and tried again after a short
//     delay, three tries in all; when every try was unconfirmed the acquire returns
//     ErrNotReplicated and the owner holds nothing it did not hold before;
//   - an unlock is sent again with the same request id, whose latch replays the first
//     result, and waited for again, three tries in all; the master has released the hold
//     either way, so Unlock returns nil and logs a warning when no try was confirmed;
//   - a force-unlock is waited for once and logs a warning when unconfirmed;
//   - a renewal counts as a failed renewal call: it is retried at the next tick and the
//     hold's safe-until time does not move.
//
// Sync narrows, but does not close, the window in which a failover loses a lock
// (docs/RELIABILITY.md).
type ReplicaSyncMode int

const (
	// ReplicaSyncAuto is Redisson's default: on with a Sentinel or Cluster client
	// (rueidis.ClientModeSentinel, rueidis.ClientModeCluster), off with a single-server
	// client.
	ReplicaSyncAuto ReplicaSyncMode = iota
	// ReplicaSyncOn waits for replicas with every client, for example a single-server
	// client connected to a master that has replicas.
	ReplicaSyncOn
	// ReplicaSyncOff never sends WAIT.
	ReplicaSyncOff
)

// Options configure a Client. The zero value means Redisson's defaults.
type Options struct {
	// WatchdogTimeout is the lease of locks taken without one; renewal runs every third of
	// it. Zero means DefaultWatchdogTimeout; it must be at least 50 ms.
	WatchdogTimeout time.Duration
	// RenewBatchSize is the most locks renewed by one script call. Zero means
	// DefaultRenewBatchSize.
	RenewBatchSize int
	// UnlockLatchTTL is how long an unlock's result is kept so that its retries replay it.
	// Zero means DefaultUnlockLatchTTL.
	UnlockLatchTTL time.Duration
	// ReleaseTimeout bounds releases that ignore the caller's cancellation, and the script
	// call of an acquire whose ctx ends while it is in flight (the call waits for its reply,
	// so that a hold it took can be given back). Zero means DefaultReleaseTimeout. The bound
	// can run late by up to 10 ms or 4% of it, whichever is more: requests whose bounds end
	// close together share one timer.
	ReleaseTimeout time.Duration
	// PubSub chooses classic or sharded pub/sub in a cluster. Zero means PubSubAuto.
	PubSub PubSubMode
	// JavaPubSub tells how the Java services on the same lock names subscribe in a
	// cluster. Zero means JavaPubSubUnknown: either way.
	JavaPubSub JavaPubSub
	// ReplicaSync chooses whether lock writes wait for the master's replicas (see
	// ReplicaSyncMode). Zero means ReplicaSyncAuto: on with Sentinel and Cluster clients,
	// off with a single-server client.
	ReplicaSync ReplicaSyncMode
	// ReplicaSyncTimeout is how long each WAIT for replicas blocks at most. Zero means
	// DefaultReplicaSyncTimeout; it must be at least 1 ms. The WAITs of an Unlock are also
	// bounded by ReleaseTimeout.
	ReplicaSyncTimeout time.Duration
	// Logger receives warnings (a lock lost, a watchdog renewal failed, a lock held longer
	// than HoldWarning, an unlock or force-unlock no replica confirmed, a server refusing
	// WAIT or INFO) and debug records (a hold given back after its caller gave up or because
	// no replica confirmed it). Nil means no logging.
	Logger *slog.Logger
	// Observer, when set, receives every lock operation from its start to its end, the end
	// of every hold, and the Client's counts (Client.Stats), to turn them into metrics and
	// traces: github.com/goredisson/goredisson/otel is the OpenTelemetry one (metrics
	// goredisson.lock.*, a span per operation). Nil means none.
	Observer Observer
	// HoldWarning, when positive, logs a warning for every hold kept longer than this.
	HoldWarning time.Duration
	// FairLockWaitTimeout is the thread-wait time of the fair lock's waiters (see
	// NewFairLock) when TryLock gives no positive wait: how much later than the waiter
	// before it a queued waiter may take the lock before the queue drops it. Zero means
	// DefaultFairLockWaitTimeout, Redisson's default; set it as the Java services on the
	// same names set fairLockWaitTimeout.
	FairLockWaitTimeout time.Duration
	// RenewOtherReaders makes the watchdog of a read hold also renew the timeout keys of
	// every other reader of the same read-write lock, Java's included, as Redisson 3.x
	// before 3.44 did. Turn it on when Java services on Redisson 3.44.0 to 3.52.0 read-lock
	// the same names: their read-lock renewal renews the wrong keys once a client holds two
	// or more read-locked names, and fails for a reader holding the read lock twice, so a
	// Java reader's timeout key expires while it reads, and the next read release (Go's or
	// Java's) deletes the lock and lets a writer in. With it on, a Java reader stays a
	// reader while a Go reader of this Client holds the lock. It costs one HKEYS and a
	// PEXPIRE per reader and hold at each renewal, and keeps a dead reader's hold alive
	// until the Go reader leaves. docs/INTEROP.md, "Redisson 3.44 to 3.52 readers".
	RenewOtherReaders bool
}

// withDefaults checks o and fills its zero fields. A field out of range is an error that
// names it.
func (o Options) withDefaults() (Options, error) {
	for _, d := range []struct {
		field string
		value time.Duration
	}{
		{"WatchdogTimeout", o.WatchdogTimeout},
		{"UnlockLatchTTL", o.UnlockLatchTTL},
		{"ReleaseTimeout", o.ReleaseTimeout},
		{"ReplicaSyncTimeout", o.ReplicaSyncTimeout},
		{"HoldWarning", o.HoldWarning},
		{"FairLockWaitTimeout", o.FairLockWaitTimeout},
	} {
		if d.value < 0 {
			return o, fmt.Errorf("%w: %s %v is negative", ErrInvalidOptions, d.field, d.value)
		}
	}
	if o.RenewBatchSize < 0 {
		return o, fmt.Errorf("%w: RenewBatchSize %d is negative", ErrInvalidOptions, o.RenewBatchSize)
	}
	if o.PubSub < PubSubAuto || o.PubSub > PubSubClassic {
		return o, fmt.Errorf("%w: PubSub %d is not a PubSubMode", ErrInvalidOptions, o.PubSub)
	}
	if o.ReplicaSync < ReplicaSyncAuto || o.ReplicaSync > ReplicaSyncOff {
		return o, fmt.Errorf("%w: ReplicaSync %d is not a ReplicaSyncMode", ErrInvalidOptions, o.ReplicaSync)
	}
	if o.WatchdogTimeout == 0 {
		o.WatchdogTimeout = DefaultWatchdogTimeout
	}
	if o.WatchdogTimeout < minWatchdogTimeout {
		return o, fmt.Errorf("%w: WatchdogTimeout %v is below %v", ErrInvalidOptions, o.WatchdogTimeout, minWatchdogTimeout)
	}
	if o.RenewBatchSize == 0 {
		o.RenewBatchSize = DefaultRenewBatchSize
	}
	if o.UnlockLatchTTL == 0 {
		o.UnlockLatchTTL = DefaultUnlockLatchTTL
	}
	if o.ReleaseTimeout == 0 {
		o.ReleaseTimeout = DefaultReleaseTimeout
	}
	if o.ReplicaSyncTimeout == 0 {
		o.ReplicaSyncTimeout = DefaultReplicaSyncTimeout
	}
	if o.FairLockWaitTimeout == 0 {
		o.FairLockWaitTimeout = DefaultFairLockWaitTimeout
	}
	if o.ReplicaSyncTimeout < time.Millisecond {
		return o, fmt.Errorf("%w: ReplicaSyncTimeout %v is below 1ms (WAIT counts milliseconds, and 0 would block forever)", ErrInvalidOptions, o.ReplicaSyncTimeout)
	}
	return o, nil
}
