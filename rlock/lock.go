package rlock

import (
	"context"
	"math"
	"time"

	"github.com/redis/rueidis"

	"github.com/goredisson/goredisson/lua"
)

// Lock is the handle of one named lock. Every method is safe for concurrent use. Methods
// that act for an owner take it from ctx (see NewOwner) and return ErrNoOwner when ctx
// carries none; every method returns ErrEmptyName for a handle with an empty name and
// ErrClosed once the Client is closed. Every error names the method and the lock.
//
// A Lock comes from NewLock (Redisson's RLock), NewNonReentrantLock, NewSpinLock,
// NewFairLock, or is a half of a ReadWriteLock (ReadLock, WriteLock). The methods'
// documentation describes NewLock's; the others say how theirs differ (ErrReentry instead of
// re-entering; polling instead of pub/sub; a queue of waiters served in order; shared reads
// and an exclusive write on one hash).
type Lock struct {
	c        *Client
	name     string
	channel  string
	kind     lockKind
	tokenKey string    // fenced: the token counter
	spin     *spinLock // spin: its backoff
	fair     *fairKeys // fair: its queue and timeout set
}

// lockKind is the lock type a Lock handle implements: what its acquire script is and how
// its reply reads, and how its callers wait.
type lockKind uint8

const (
	reentrant    lockKind = iota // Redisson's RLock
	fenced                       // RFencedLock: a reentrant lock that issues tokens
	nonReentrant                 // getNonReentrantLock: a holder cannot take it again
	spin                         // RSpinLock: waiters poll, releases publish nothing
	fair                         // RedissonFairLock: waiters queue, each on its own channel
	readLock                     // RReadWriteLock.readLock(): shared with other readers
	writeLock                    // RReadWriteLock.writeLock(): the writer field ends in ":write"
)

// readWrite reports whether l is a half of a read-write lock.
func (l *Lock) readWrite() bool { return l.kind == readLock || l.kind == writeLock }

// Name returns the lock's name, which is its Redis key.
func (l *Lock) Name() string { return l.name }

// IsLocked reports whether any owner, of any client, holds the lock (EXISTS). On the halves
// of a read-write lock it reports Redisson's answer for that half: the read lock is locked
// when some owner reads (the mode is "read", or "write" and the writer also reads), the
// write lock when the mode is "write".
func (l *Lock) IsLocked(ctx context.Context) (bool, error) {
	if err := l.check(); err != nil {
		return false, l.fail("IsLocked", err)
	}
	var n int64
	var err error
	switch l.kind {
	case readLock:
		n, err = lua.ReadLocked.Exec(ctx, l.c.rc, []string{l.name}, nil).AsInt64()
	case writeLock:
		var mode string
		mode, err = l.c.rc.Do(ctx, l.c.rc.B().Hget().Key(l.name).Field("mode").Build()).ToString()
		if mode == "write" {
			n = 1
		}
		if rueidis.IsRedisNil(err) {
			err = nil
		}
	default:
		n, err = l.c.rc.Do(ctx, l.c.rc.B().Exists().Key(l.name).Build()).AsInt64()
	}
	return n == 1, l.fail("IsLocked", err)
}

// IsHeld reports whether ctx's owner holds the lock through this client (HEXISTS).
func (l *Lock) IsHeld(ctx context.Context) (bool, error) {
	field, err := l.ownerField(ctx)
	if err != nil {
		return false, l.fail("IsHeld", err)
	}
	held, err := l.c.rc.Do(ctx, l.c.rc.B().Hexists().Key(l.name).Field(field).Build()).AsBool()
	return held, l.fail("IsHeld", err)
}

// HoldCount returns how many times ctx's owner holds the lock: 0 when it does not, and
// more than 1 after re-entering (HGET).
func (l *Lock) HoldCount(ctx context.Context) (int, error) {
	field, err := l.ownerField(ctx)
	if err != nil {
		return 0, l.fail("HoldCount", err)
	}
	n, err := l.c.rc.Do(ctx, l.c.rc.B().Hget().Key(l.name).Field(field).Build()).AsInt64()
	if rueidis.IsRedisNil(err) {
		return 0, nil
	}
	return int(n), l.fail("HoldCount", err)
}

// RemainTTL returns the lock's remaining lease as the server counts it (PTTL); a TTL beyond
// the largest Duration (about 292 years) is that Duration. It returns ErrNotLocked when
// nobody holds the lock, and ErrNoExpiry when the lock's key has no TTL.
func (l *Lock) RemainTTL(ctx context.Context) (time.Duration, error) {
	if err := l.check(); err != nil {
		return 0, l.fail("RemainTTL", err)
	}
	ms, err := l.c.rc.Do(ctx, l.c.rc.B().Pttl().Key(l.name).Build()).AsInt64()
	switch {
	case err != nil:
		return 0, l.fail("RemainTTL", err)
	case ms == -2:
		return 0, l.fail("RemainTTL", ErrNotLocked)
	case ms == -1:
		return 0, l.fail("RemainTTL", ErrNoExpiry)
	}
	return millis(ms), nil
}

// millis converts ms, a count of milliseconds from Redis, to a Duration, saturating at the
// largest Duration (about 292 years) rather than overflowing.
func millis(ms int64) time.Duration {
	if ms > int64(math.MaxInt64/time.Millisecond) {
		return math.MaxInt64
	}
	return time.Duration(ms) * time.Millisecond
}

// Held returns a context for work done under the lock, and the function that stops
// watching it. The context carries ctx's values (the owner included, so calls made with it
// re-enter) and is cancelled:
//
//   - with ErrReleased when the owner's final Unlock returns;
//   - with ErrLockLost and a reason when the hold ends otherwise: ErrLeaseExpired when its
//     safe-until time passes (see below), ErrRemoved when Redis shows the hold gone (renewal
//     or an Unlock found the owner's field missing), ErrForceUnlocked when this client
//     force-unlocks the lock, ErrClosed when the Client is closed;
//   - when ctx ends, or the returned function is called.
//
// Safe-until: every hold is safe until the moment the request that last set its lease
// (the acquisition, a renewal, or a partial Unlock) was sent, plus that lease, less a
// margin of 1% of the lease plus 10 ms for clock drift and timer delay. A timer ends the hold at that moment
// unless a renewal moved it, whether or not Redis answers, so the context ends before the
// server can expire the key and another owner take the lock. A re-entry with an explicit
// lease moves it too, earlier or later. A removal is learnt at the next renewal (a third of
// the watchdog timeout) at the latest, for watchdog holds. docs/RELIABILITY.md says what no
// lease-based lock can detect (a process paused past its lease, a failover that lost the
// write).
//
// Held reads the client's own table of holds and sends nothing to Redis. It returns
// ErrNotHeld when ctx's owner holds no lock by this name through this Client.
func (l *Lock) Held(ctx context.Context) (context.Context, context.CancelFunc, error) {
	hctx, stop, _, err := l.held(ctx)
	return hctx, stop, err
}

// held is Held, with the token of the hold's latest acquisition (fenced locks).
func (l *Lock) held(ctx context.Context) (context.Context, context.CancelFunc, int64, error) {
	field, err := l.ownerField(ctx)
	if err != nil {
		return nil, nil, 0, l.fail("Held", err)
	}
	hctx, stop, token, ok := l.c.holds.watch(l.name, field, ctx)
	if !ok {
		return nil, nil, 0, l.fail("Held", ErrNotHeld)
	}
	return hctx, stop, token, nil
}

// check returns ErrEmptyName for a handle without a name and ErrClosed after Close.
func (l *Lock) check() error {
	if err := l.c.checkName(l.name); err != nil {
		return err
	}
	if l.spin != nil {
		return l.spin.invalid
	}
	return nil
}

// ownerField returns the hash field of the owner carried by ctx, after check.
func (l *Lock) ownerField(ctx context.Context) (string, error) {
	if err := l.check(); err != nil {
		return "", err
	}
	o, ok := OwnerFrom(ctx)
	if !ok {
		return "", ErrNoOwner
	}
	return l.fieldOf(o), nil
}

// fieldOf is owner o's holder field on l: the client's field, with the writer suffix on a
// write lock.
func (l *Lock) fieldOf(o Owner) string {
	if l.kind == writeLock {
		return l.c.field(o) + writerSuffix
	}
	return l.c.field(o)
}
