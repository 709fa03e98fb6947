package renewal

import "time"

// Defaults used for zero Options fields.
const (
	// DefaultLease is Redisson's lockWatchdogTimeout: the TTL each renewal sets.
	DefaultLease = 30 * time.Second
	// DefaultBatchSize is Redisson's lockWatchdogBatchSize: locks per renewal call.
	DefaultBatchSize = 100
	// DefaultBuckets is the number of slots of the wheel; a tick is Lease/3/Buckets.
	DefaultBuckets = 32
)

// Options configure a Wheel. The zero value means the defaults above.
type Options struct {
	// Lease is the TTL set by each renewal; renewal runs every Lease/3.
	Lease time.Duration
	// BatchSize is the largest number of locks renewed by one script call.
	BatchSize int
	// Buckets is the number of wheel slots per renewal interval.
	Buckets int
	// Cluster groups each renewal call's locks by hash slot, as a Redis Cluster requires.
	Cluster bool
	// OnLost is called, from the wheel's goroutine and never with a lock held, once for each
	// owner whose hold is found lost, with ErrNotHeld or ErrLeaseExpired.
	OnLost func(name, field string, cause error)
	// OnError is called, from the wheel's goroutine, for each renewal call that failed,
	// with the number of locks it carried; they are retried at the next tick.
	OnError func(err error, locks int)
}

func (o Options) withDefaults() Options {
	if o.Lease <= 0 {
		o.Lease = DefaultLease
	}
	if o.BatchSize <= 0 {
		o.BatchSize = DefaultBatchSize
	}
	if o.Buckets <= 0 {
		o.Buckets = DefaultBuckets
	}
	if o.OnError == nil {
		o.OnError = func(error, int) {}
	}
	if o.OnLost == nil {
		o.OnLost = func(string, string, error) {}
	}
	return o
}
