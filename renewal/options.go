package renewal

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/rueidis"

	"github.com/goredisson/goredisson/lua"
)

// Defaults used for zero Options fields.
const (
	// DefaultLease is Redisson's lockWatchdogTimeout: the TTL each renewal sets.
	DefaultLease = 30 * time.Second
	// DefaultBatchSize is Redisson's lockWatchdogBatchSize: locks per renewal call.
	DefaultBatchSize = 100
	// DefaultBuckets is the number of slots of the wheel; a tick is Lease/3/Buckets.
	DefaultBuckets = 32
)

// ErrInvalidOptions is returned by New for a negative Options field, or a Lease below 3 ms.
var ErrInvalidOptions = errors.New("renewal: invalid options")

// Options configure a Wheel. A zero field means its default; a negative one is rejected.
type Options struct {
	// Lease is the TTL set by each renewal; renewal runs every Lease/3.
	Lease time.Duration
	// BatchSize is the largest number of locks renewed by one script call.
	BatchSize int
	// Buckets is the number of wheel slots per renewal interval.
	Buckets int
	// Cluster groups each renewal call's locks by hash slot, as a Redis Cluster requires.
	Cluster bool
	// OnRenewed is called, from the wheel's goroutine and never with a lock held, for each
	// hold whose lease a renewal call extended; sent is when that call was sent, so the new
	// lease runs out no earlier than sent + Lease.
	OnRenewed func(name, field string, id uint64, sent time.Time)
	// OnGone is called, from the wheel's goroutine and never with a lock held, for each hold
	// whose field a renewal call found gone from the lock; the wheel has stopped renewing it.
	OnGone func(name, field string, id uint64)
	// OnError is called, from the wheel's goroutine, for each renewal call that failed,
	// with the number of locks it carried; they are retried at the next tick, until their
	// holds are removed.
	OnError func(err error, locks int)
	// Sync, when set, sends the renewal calls of each pass through it, one Sync call per
	// master (per hash slot with Cluster), and a call it reports unconfirmed fails like any
	// failed call: OnError, retried at the next tick, no OnRenewed. Nil sends every pass
	// as one pipeline through the client, with no wait for replicas.
	Sync SyncFunc
	// AllReaders renews read holds with lua.RenewReadAll instead of lua.RenewRead: every
	// reader's timeout keys of a read-locked name, not only the holder's own.
	AllReaders bool
}

// SyncFunc runs renewal calls and waits for replicas: it runs s once per exec, all on the
// master that serves key and on one connection, then waits on that connection for the
// master's replicas. It returns one reply per exec, and a non-nil error when the master
// has replicas and none of them confirmed the calls' writes.
type SyncFunc func(ctx context.Context, s lua.Script, key string, execs []rueidis.LuaExec) ([]rueidis.RedisResult, error)

func (o Options) withDefaults() (Options, error) {
	switch {
	case o.Lease < 0:
		return o, fmt.Errorf("%w: Lease %v is negative", ErrInvalidOptions, o.Lease)
	case o.BatchSize < 0:
		return o, fmt.Errorf("%w: BatchSize %d is negative", ErrInvalidOptions, o.BatchSize)
	case o.Buckets < 0:
		return o, fmt.Errorf("%w: Buckets %d is negative", ErrInvalidOptions, o.Buckets)
	}
	if o.Lease == 0 {
		o.Lease = DefaultLease
	}
	if o.Lease < 3*time.Millisecond {
		return o, fmt.Errorf("%w: Lease %v is below 3ms", ErrInvalidOptions, o.Lease)
	}
	if o.BatchSize == 0 {
		o.BatchSize = DefaultBatchSize
	}
	if o.Buckets == 0 {
		o.Buckets = DefaultBuckets
	}
	if o.OnError == nil {
		o.OnError = func(error, int) {}
	}
	if o.OnRenewed == nil {
		o.OnRenewed = func(string, string, uint64, time.Time) {}
	}
	if o.OnGone == nil {
		o.OnGone = func(string, string, uint64) {}
	}
	return o, nil
}
