package rlock

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/redis/rueidis"

	"github.com/goredisson/goredisson/internal/keys"
	"github.com/goredisson/goredisson/pubsub"
	"github.com/goredisson/goredisson/renewal"
)

// Client creates locks that share Redis keys with Java Redisson clients. It has its own
// random client id, its own table of holds and its own watchdog; pub/sub subscriptions are
// shared with every Client on the same rueidis client. It is safe for concurrent use.
// Create it with New and end it with Close.
type Client struct {
	rc        rueidis.Client
	id        string // random v4 UUID, the first part of every hash field
	fields    fieldCache
	opts      Options
	publish   []string // publish commands passed to the release scripts
	listen    pubsub.Kinds
	subs      *pubsub.Subscriber
	wheel     *renewal.Wheel
	holds     *holds
	latches   *latchSweeper
	replicas  *replicaSync // nil when lock writes do not wait for replicas
	obs       *observer
	leaseMs   string // WatchdogTimeout in ms, as scripts take it
	latchMs   string // UnlockLatchTTL in ms, as the release script takes it
	closed    atomic.Bool
	closeOnce sync.Once
	bgMu      sync.RWMutex   // orders bg.Add after Close's bg.Wait: see goBackground
	bg        sync.WaitGroup // calls of goBackground: group members' calls, late give-backs
	workers   *workers       // goroutines of goBackground
}

// New returns a Client that talks to Redis through rc, with a fresh random client id. It
// never closes rc. With a Redis Cluster client it asks the server once (COMMAND INFO,
// bounded by ctx) which pub/sub commands it has and chooses how to subscribe and publish
// (PubSubMode, JavaPubSub); it fails with an error wrapping pubsub.ErrUnsupported when the
// cluster lacks the pub/sub that PubSub asks for.
//
// It names the connection its calls share, CLIENT SETNAME goredisson:<client id>, where the
// ACL allows (ConnectionNamePrefix), so that operators can tell which process holds a lock.
//
// It returns ErrNilClient for a nil rc, ErrInvalidOptions (naming the field) for an option
// out of range, and the server's error when the cluster probe cannot reach Redis.
func New(ctx context.Context, rc rueidis.Client, opts Options) (*Client, error) {
	if rc == nil {
		return nil, ErrNilClient
	}
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	plan, err := opts.plan(ctx, rc)
	if err != nil {
		return nil, err
	}
	c := &Client{
		rc:       rc,
		id:       uuid.NewString(),
		opts:     opts,
		publish:  plan.Publish.PublishCommands(),
		listen:   plan.Listen,
		subs:     pubsub.New(rc, plan.Listen),
		latches:  newLatchSweeper(rc),
		workers:  newWorkers(),
		replicas: newReplicaSync(rc, opts),
		leaseMs:  strconv.FormatInt(opts.WatchdogTimeout.Milliseconds(), 10),
		latchMs:  strconv.FormatInt(opts.UnlockLatchTTL.Milliseconds(), 10),
	}
	c.wheel, err = renewal.New(rc, renewal.Options{
		Lease:      opts.WatchdogTimeout,
		BatchSize:  opts.RenewBatchSize,
		Cluster:    rc.Mode() == rueidis.ClientModeCluster,
		Sync:       c.replicas.renewalSync(),
		AllReaders: opts.RenewOtherReaders,
		OnRenewed:  func(name, field string, id uint64, sent time.Time) { c.holds.renewed(name, field, id, sent) },
		OnGone:     func(name, field string, id uint64) { c.holds.gone(name, field, id) },
		OnError: func(err error, locks int) {
			c.obs.log.Warn("rlock: watchdog renewal failed; retrying at the next tick", "locks", locks, "error", err)
		},
	})
	if err != nil {
		c.subs.Close()
		return nil, fmt.Errorf("%w: %w", ErrInvalidOptions, err)
	}
	c.obs = newObserver(opts, firstNode(rc))
	c.holds = newHolds(c.wheel, opts.WatchdogTimeout, c.obs)
	if c.obs.on() {
		if err := c.obs.ext.Attach(c); err != nil {
			c.wheel.Close()
			c.subs.Close()
			return nil, fmt.Errorf("rlock: Observer: %w", err)
		}
	}
	c.nameConnections(ctx)
	return c, nil
}

// ID returns the client id: the random UUID that starts every hash field this client writes.
func (c *Client) ID() string { return c.id }

// NewLock returns the handle of the lock called name. The name is the Redis key, verbatim,
// as Java's getLock(name) uses it. Handles are cheap, hold no state of their own and are
// safe for concurrent use; any number may exist for one name.
//
// NewLock never fails: every call on the handle checks its arguments, and returns
// ErrEmptyName for an empty name and ErrClosed after Close.
func (c *Client) NewLock(name string) *Lock {
	return &Lock{c: c, name: name, channel: keys.LockChannel(name)}
}

// NewNonReentrantLock returns the handle of the non-reentrant lock called name, as Java's
// getNonReentrantLock(name) (Redisson 4.4+): the lock of NewLock, on the same hash, except
// that it is acquired only when nobody holds it. An owner that holds it and acquires it
// again gets ErrReentry at once, from Lock, LockFor, TryLock, Do and TryDo alike, and keeps
// its one hold; other owners wait for it as for any Lock. Its hold count is never more than
// 1, so the first Unlock releases it. Like NewLock it never fails.
func (c *Client) NewNonReentrantLock(name string) *Lock {
	return &Lock{c: c, name: name, channel: keys.LockChannel(name), kind: nonReentrant}
}

// Close stops the watchdog and every subscription of this client, wakes every waiting
// acquire with ErrClosed, waits for pending give-backs (each bounded by ReleaseTimeout),
// ends every Held context (cause ErrLockLost and ErrClosed), and returns when every
// goroutine of the client has stopped. Locks still held are not released: they expire with
// their lease, as Redisson's do at shutdown. Close does not close the rueidis client and is
// idempotent.
func (c *Client) Close() {
	c.closeOnce.Do(func() {
		c.bgMu.Lock()
		c.closed.Store(true)
		c.bgMu.Unlock()
		c.subs.Close()
		c.bg.Wait()
		c.workers.close()
		c.holds.close(lost(ErrClosed))
		c.wheel.Close()
		c.replicas.wait()
		c.latches.close()
		if c.obs.on() {
			c.obs.ext.Detach(c)
		}
	})
}

// goBackground runs f on a goroutine that Close waits for, one of the client's workers, and
// reports false, running nothing, once the client is closed.
func (c *Client) goBackground(f func()) bool {
	c.bgMu.RLock()
	defer c.bgMu.RUnlock()
	if c.closed.Load() {
		return false
	}
	c.bg.Add(1)
	c.workers.run(f, &c.bg)
	return true
}

// checkName returns ErrEmptyName for an empty name and ErrClosed after Close: the checks of
// every call on a handle.
func (c *Client) checkName(name string) error {
	if name == "" {
		return ErrEmptyName
	}
	if c.closed.Load() {
		return ErrClosed
	}
	return nil
}

// field returns the hash field of owner o: "<client-uuid>:<owner>". Recent owners' fields
// are remembered (fieldCache), so that an owner's Lock and Unlock build it once.
func (c *Client) field(o Owner) string {
	slot := &c.fields[uint64(o)%uint64(len(c.fields))]
	if e := slot.Load(); e != nil && e.owner == o {
		return e.field
	}
	var b [20]byte
	f := c.id + ":" + string(strconv.AppendInt(b[:0], int64(o), 10))
	slot.Store(&ownerField{owner: o, field: f})
	return f
}

// fieldCache holds the fields of recent owners, in the slot of owner modulo its length:
// owners are minted in sequence, so owners at work at once rarely share a slot, and an
// owner's later calls find its field there.
type fieldCache [64]atomic.Pointer[ownerField]

// ownerField is one owner's field, as fieldCache keeps it.
type ownerField struct {
	owner Owner
	field string
}

// firstNode returns the address of rc's first node in sorted order, "" when it has none.
func firstNode(rc rueidis.Client) string {
	var first string
	for addr := range rc.Nodes() {
		if first == "" || addr < first {
			first = addr
		}
	}
	return first
}

// plan returns the pub/sub of a Client with these options on rc (pubsub.Choose).
func (o Options) plan(ctx context.Context, rc rueidis.Client) (pubsub.Plan, error) {
	java := map[JavaPubSub]pubsub.Kinds{
		JavaPubSubUnknown: pubsub.Classic | pubsub.Sharded,
		JavaPubSubAuto:    pubsub.Sharded,
		JavaPubSubClassic: pubsub.Classic,
		JavaPubSubNone:    0,
	}
	others, ok := java[o.JavaPubSub]
	if !ok {
		return pubsub.Plan{}, fmt.Errorf("%w: JavaPubSub %d is not a JavaPubSub", ErrInvalidOptions, o.JavaPubSub)
	}
	mode := map[PubSubMode]pubsub.Mode{PubSubAuto: pubsub.ModeAuto, PubSubSharded: pubsub.ModeSharded, PubSubClassic: pubsub.ModeClassic}
	plan, err := pubsub.Choose(ctx, rc, mode[o.PubSub], others)
	if err != nil {
		return pubsub.Plan{}, fmt.Errorf("rlock: choosing pub/sub: %w", err)
	}
	return plan, nil
}
