package rlock

import (
	"context"
	"errors"
	"time"
)

// MultiLock is a group of locks acquired and released as one, all or none: Java Redisson's
// RedissonMultiLock. Its locks may come from different Clients, on different Redis servers,
// or be different names on one server; each is an ordinary lock, shared with Java, written
// with ctx's owner as Redisson's multilock writes each of its locks with the thread's id.
// A Java RedissonMultiLock over the same locks excludes it and is woken by its releases.
//
// The locks are acquired in the order given, as Redisson does: a lock held by another owner
// is waited for (through its Client's pub/sub) before the ones after it, so that groups over
// the same locks in the same order never hold each other's later locks while waiting. The
// first lock not yet held is taken alone, and then the locks after it at once, not one round
// trip each; those taken past one held by another owner are given back before that one is
// waited for. Owners that try the group once each thus meet on its first lock, and one of
// them gets the group. When a lock cannot be acquired within the wait, every lock acquired
// is given back. Each lock with the watchdog is renewed by its own Client's watchdog.
//
// An owner that holds the group re-enters it: each lock's hold count goes up, and each
// acquire needs its Unlock. Every method is safe for concurrent use.
type MultiLock struct {
	g *group
}

// NewMultiLock returns the group of locks. It returns ErrNoMembers for no lock or a nil one,
// ErrDuplicateMember when a lock (one name on one server) is given twice, ErrMixedMembers
// for locks of different types (NewLock, NewNonReentrantLock, NewSpinLock) or from Clients
// with different WatchdogTimeouts, and ErrEmptyName or ErrClosed for a lock with an empty
// name or a closed Client.
func NewMultiLock(locks ...*Lock) (*MultiLock, error) {
	g, err := newGroup("NewMultiLock", locks, false)
	if err != nil {
		return nil, err
	}
	return &MultiLock{g: g}, nil
}

// Name returns the group as errors name it: each lock as "name@address", in order.
func (m *MultiLock) Name() string { return m.g.name }

// Locks returns the group's locks, in order.
func (m *MultiLock) Locks() []*Lock { return append([]*Lock(nil), m.g.members...) }

// Lock acquires every lock of the group for ctx's owner, each with its Client's watchdog, and
// blocks until it holds them all or ctx ends: rounds of Redisson's lock(), each waiting 1.5 s
// per lock, all given back between rounds. It returns nil if and only if the owner holds
// every lock. When ctx ends it returns an error matching ctx.Err() (and, after a lock that
// failed for an error rather than for another owner, that error too), and holds nothing it
// did not hold before. A lock that fails in a way waiting cannot change ends it at once with
// that lock's error, naming it: a refusal by its server's ACL (matching ErrNoPermission, and
// saying what was refused), a key of another type, a script error. A lock whose server is
// down or restarting is tried again after a pause.
func (m *MultiLock) Lock(ctx context.Context) error {
	return m.acquire(ctx, "Lock", unbounded, 0)
}

// LockFor acquires every lock like Lock, with an explicit lease that is never renewed: each
// lock is acquired with twice the round's wait, and set to lease once all are held
// (Redisson's rule, so that no lock runs out while the others are taken). It returns
// ErrInvalidLease unless lease is positive.
func (m *MultiLock) LockFor(ctx context.Context, lease time.Duration) error {
	if lease <= 0 {
		return m.fail("LockFor", ErrInvalidLease)
	}
	return m.acquire(ctx, "LockFor", unbounded, lease)
}

// TryLock acquires every lock of the group within wait (zero: one attempt each); lease is
// the explicit lease, zero the watchdog. A lock held by another owner is waited for with the
// rest of the wait; a lock that fails for an error ends the round, which starts again from
// the first lock after a pause while the wait lasts.
//
// It returns nil when the owner holds every lock; ErrLocked when another owner kept a lock
// for the whole wait; the error of the lock that failed (naming it) when one failed for
// another reason, its server down for instance (at once, without a retry, when waiting cannot
// change it: a refusal by the server's ACL, matching ErrNoPermission, a key of another type,
// a script error); an error matching ctx.Err() when ctx ended
// first; ErrInvalidWait or ErrInvalidLease for negative values. On every error the owner
// holds nothing it did not hold before.
func (m *MultiLock) TryLock(ctx context.Context, wait, lease time.Duration) error {
	if err := checkTry(wait, lease); err != nil {
		return m.fail("TryLock", err)
	}
	return m.acquire(ctx, "TryLock", bounded(wait), lease)
}

// acquire is the group's acquire named call, reported to the Observer.
func (m *MultiLock) acquire(ctx context.Context, call string, wait waitBound, lease time.Duration) error {
	return m.fail(call, m.g.observed(ctx, OpGroupAcquire, call, wait, lease, func(ctx context.Context) error {
		return m.g.acquire(ctx, wait, lease)
	}))
}

// Unlock releases one hold of ctx's owner on every lock of the group, at once (each as
// Lock.Unlock: not cancelled by ctx, bounded by its Client's ReleaseTimeout). It returns nil
// when every lock was released, and otherwise the errors of the locks that were not, each
// naming its lock: ErrNotHeld for a lock the owner no longer held.
func (m *MultiLock) Unlock(ctx context.Context) error {
	if _, ok := OwnerFrom(ctx); !ok {
		return m.fail("Unlock", ErrNoOwner)
	}
	return m.g.observed(ctx, OpGroupRelease, "Unlock", unbounded, 0, m.unlock)
}

func (m *MultiLock) unlock(ctx context.Context) error {
	var errs []error
	for i, err := range m.g.unlock(ctx) {
		if err != nil {
			errs = append(errs, m.g.memberErr(i, err))
		}
	}
	if len(errs) == 0 {
		return nil
	}
	return m.fail("Unlock", joinLine(errs...))
}

// Held returns a context for work done under the group, as Lock.Held, and the function that
// stops watching it. It ends as soon as any lock's hold ends, with that hold's cause
// (ErrReleased after the final Unlock; ErrLockLost and a reason, naming the lock, when the
// hold was lost). It reads the Clients' tables of holds and sends nothing to Redis; it
// returns ErrNotHeld unless ctx's owner holds every lock.
func (m *MultiLock) Held(ctx context.Context) (context.Context, context.CancelFunc, error) {
	hctx, stop, err := m.g.held(ctx)
	return hctx, stop, m.fail("Held", err)
}

// Validity returns how long the owner's hold of the group is known to be safe: until the
// earliest safe-until time of its locks (see Lock.Held), less now. Watchdog renewals move it
// later. It reads the Clients' tables of holds; it returns ErrNotHeld unless ctx's owner
// holds every lock.
func (m *MultiLock) Validity(ctx context.Context) (time.Duration, error) {
	v, err := m.g.validityFor(ctx)
	return v, m.fail("Validity", err)
}

// IsHeld reports whether ctx's owner holds every lock of the group, asking each lock's
// server (Lock.IsHeld), as Redisson's isHeldByThread. A lock whose server fails makes it
// return that error.
func (m *MultiLock) IsHeld(ctx context.Context) (bool, error) {
	n, err := m.g.isHeld(ctx)
	return err == nil && n == len(m.g.members), m.fail("IsHeld", err)
}

func (m *MultiLock) fail(op string, err error) error { return failOn(op, m.g.name, err) }

// RedLock is a group of locks on independent Redis servers held once a majority of them,
// n/2+1, is acquired: the Redlock algorithm, as Java Redisson's RedissonRedLock (which
// Redisson deprecates in favour of a single lock or a fenced lock; docs/RELIABILITY.md says
// what it does and does not guarantee). Each lock is an ordinary lock shared with Java, so a
// Java RedissonRedLock over the same servers and names excludes it and is woken by its
// releases.
//
// The locks are acquired in order, as in MultiLock, with these differences: all the locks
// from the first not yet held are tried at once (a RedLock must not wait on one server
// before it tries the others); each lock held
// by another owner is waited for at most the wait divided by the number of locks
// (Redisson's rule); up to n - (n/2+1) locks may fail, for another owner or an error (a
// server down or stopped), and the acquire succeeds as soon as a majority is held. The
// acquires report the validity: how long the majority is known to be held, the Redlock
// "lease minus elapsed time minus clock drift" (see Validity).
//
// An owner that holds a majority re-enters exactly the locks it holds. Every method is safe
// for concurrent use.
//
// Build each server's Client with ConnectMember: it is made even while its server is down,
// so that a process can start, and acquire, with a minority of the servers down.
type RedLock struct {
	g *group
}

// NewRedLock returns the group of locks, normally one name on each of several independent
// servers (an odd number, 3 or 5). It returns the errors of NewMultiLock for bad locks.
func NewRedLock(locks ...*Lock) (*RedLock, error) {
	g, err := newGroup("NewRedLock", locks, true)
	if err != nil {
		return nil, err
	}
	return &RedLock{g: g}, nil
}

// Name returns the group as errors name it: each lock as "name@address", in order.
func (r *RedLock) Name() string { return r.g.name }

// Locks returns the group's locks, in order.
func (r *RedLock) Locks() []*Lock { return append([]*Lock(nil), r.g.members...) }

// Quorum returns how many of the locks make a hold: n/2+1.
func (r *RedLock) Quorum() int { return r.g.need }

// Lock acquires a majority of the locks for ctx's owner, each with its Client's watchdog,
// and blocks until it holds them or ctx ends (rounds of Redisson's lock(), each waiting 1.5
// s per lock). It returns the validity (see Validity) and nil if and only if the owner holds
// a majority. When ctx ends it returns an error matching ctx.Err() (and the last round's
// error when locks failed for errors) and holds nothing it did not hold before. A round that
// lost its majority to failures that waiting cannot change (a refusal by a server's ACL,
// matching ErrNoPermission; a key of another type; a script error) ends it at once:
// ErrNoQuorum joined with the locks' errors. Locks whose servers are down are tried again.
func (r *RedLock) Lock(ctx context.Context) (validity time.Duration, err error) {
	return r.acquire(ctx, "Lock", unbounded, 0)
}

// LockFor is Lock with an explicit lease that is never renewed, set on every lock acquired
// once a majority is held (the locks are acquired with twice the round's wait, Redisson's
// rule). It returns ErrInvalidLease unless lease is positive.
func (r *RedLock) LockFor(ctx context.Context, lease time.Duration) (validity time.Duration, err error) {
	if lease <= 0 {
		return 0, r.fail("LockFor", ErrInvalidLease)
	}
	return r.acquire(ctx, "LockFor", unbounded, lease)
}

// TryLock acquires a majority of the locks within wait (zero: one attempt each); lease is
// the explicit lease, zero the watchdog.
//
// It returns the validity and nil when the owner holds a majority; ErrLocked when other
// owners kept too many locks for the whole wait; ErrNoQuorum, joined with the errors of
// the locks that failed (each naming its lock), when so many failed for other reasons that
// no majority was left, a majority of servers down or stopped for instance (at once, without
// waiting out the wait, when waiting cannot change enough of them to leave a majority: a
// refusal by a server's ACL, matching ErrNoPermission, a key of another type, a script
// error); ErrNoQuorum also when the validity ran out before
// the acquire returned; an error matching ctx.Err() when ctx ended first; ErrInvalidWait or
// ErrInvalidLease for negative values. On every error the owner holds nothing it did not
// hold before.
func (r *RedLock) TryLock(ctx context.Context, wait, lease time.Duration) (validity time.Duration, err error) {
	if err := checkTry(wait, lease); err != nil {
		return 0, r.fail("TryLock", err)
	}
	return r.acquire(ctx, "TryLock", bounded(wait), lease)
}

// acquire is the group's acquire named call, reported to the Observer, with its validity.
func (r *RedLock) acquire(ctx context.Context, call string, wait waitBound, lease time.Duration) (validity time.Duration, err error) {
	err = r.g.observed(ctx, OpGroupAcquire, call, wait, lease, func(ctx context.Context) error {
		validity, err = r.acquired(ctx, call, r.g.acquire(ctx, wait, lease))
		return err
	})
	return validity, err
}

// errValidityRanOut is the cause of an acquire whose majority's validity ended before it
// returned.
var errValidityRanOut = errors.New("validity ran out before the majority was held")

// acquired finishes an acquire: the validity, and a hold whose validity already ran out, or
// one of whose members' Clients closed meanwhile, given back.
func (r *RedLock) acquired(ctx context.Context, op string, err error) (time.Duration, error) {
	if err != nil {
		return 0, r.fail(op, err)
	}
	v, err := r.g.validityFor(ctx)
	if err == nil && v > 0 {
		return v, nil
	}
	r.g.unlock(ctx)
	if errors.Is(err, ErrClosed) { // a member's Client closed as the acquire returned
		return 0, r.fail(op, err)
	}
	return 0, r.fail(op, joinLine(ErrNoQuorum, errValidityRanOut))
}

// Unlock releases one hold of ctx's owner on every lock of the group, at once (each as
// Lock.Unlock: not cancelled by ctx, bounded by its Client's ReleaseTimeout), on every
// server, whether or not the acquire took it there. It returns nil when at least one lock
// was released: a lock the owner did not hold is skipped, and one whose server failed is
// logged by its Client (its hold, never renewed again, ends with its lease). It returns the
// locks' errors, matching ErrNotHeld when they say so, when no lock was released. It waits
// for every lock's release, so a server that does not answer makes it take up to that
// Client's ReleaseTimeout.
func (r *RedLock) Unlock(ctx context.Context) error {
	if _, ok := OwnerFrom(ctx); !ok {
		return r.fail("Unlock", ErrNoOwner)
	}
	return r.g.observed(ctx, OpGroupRelease, "Unlock", unbounded, 0, r.unlock)
}

func (r *RedLock) unlock(ctx context.Context) error {
	released := 0
	var errs []error
	for i, err := range r.g.unlock(ctx) {
		switch {
		case err == nil:
			released++
		case errors.Is(err, ErrNotHeld):
			errs = append(errs, r.g.memberErr(i, err))
		default:
			errs = append(errs, r.g.memberErr(i, err))
			r.g.members[i].c.obs.log.Warn("rlock: RedLock Unlock failed on one lock; its hold ends with its lease",
				"lock", r.g.labels[i], "error", err)
		}
	}
	if released > 0 {
		return nil
	}
	return r.fail("Unlock", joinLine(errs...))
}

// Held returns a context for work done under the group, as Lock.Held, and the function that
// stops watching it. It ends as soon as the owner's holds no longer make a majority, with the
// cause of the hold whose end broke it (ErrReleased after the final Unlock; ErrLockLost and
// a reason, naming the lock, when holds were lost). It reads the Clients' tables of holds and
// sends nothing to Redis; it returns ErrNotHeld unless ctx's owner holds a majority.
func (r *RedLock) Held(ctx context.Context) (context.Context, context.CancelFunc, error) {
	hctx, stop, err := r.g.held(ctx)
	return hctx, stop, r.fail("Held", err)
}

// Validity returns how long the owner's majority is known to be held: each lock held is safe
// until the request that last set its lease was sent plus that lease, less a drift margin (1%
// of the lease plus 10 ms, see Lock.Held); the majority is safe until the quorum-th latest of
// those times. That is Redlock's validity, lease - elapsed - drift, for the lock that decides;
// watchdog renewals move it later. It reads the Clients' tables of holds; it returns
// ErrNotHeld unless ctx's owner holds a majority.
func (r *RedLock) Validity(ctx context.Context) (time.Duration, error) {
	v, err := r.g.validityFor(ctx)
	return v, r.fail("Validity", err)
}

// IsHeld reports whether ctx's owner holds a majority of the locks, asking each lock's server
// (Lock.IsHeld); a lock whose server fails counts as not held. It returns an error only when
// every server failed.
func (r *RedLock) IsHeld(ctx context.Context) (bool, error) {
	n, err := r.g.isHeld(ctx)
	return n >= r.g.need, r.fail("IsHeld", err)
}

func (r *RedLock) fail(op string, err error) error { return failOn(op, r.g.name, err) }

// validityFor is Validity for ctx's owner.
func (g *group) validityFor(ctx context.Context) (time.Duration, error) {
	o, ok := OwnerFrom(ctx)
	if !ok {
		return 0, ErrNoOwner
	}
	if err := g.check(); err != nil {
		return 0, err
	}
	safe := g.safeUntils(o)
	if len(safe) < g.need {
		return 0, ErrNotHeld
	}
	return validity(safe, g.need, time.Now()), nil
}

// isHeld asks every member's server whether ctx's owner holds it, and returns how many say
// so. A MultiLock returns the first member error; a RedLock an error only when every member
// failed.
func (g *group) isHeld(ctx context.Context) (int, error) {
	if _, ok := OwnerFrom(ctx); !ok {
		return 0, ErrNoOwner
	}
	held := make([]bool, len(g.members))
	errs := g.each(g.all(), func(i int) error {
		var err error
		held[i], err = g.members[i].IsHeld(ctx)
		return err
	})
	n, failed := 0, 0
	var first error
	for i, err := range errs {
		switch {
		case err != nil:
			failed++
			first = cmpOr(first, g.memberErr(i, err))
		case held[i]:
			n++
		}
	}
	if first != nil && (!g.redlock || failed == len(g.members)) {
		return n, first
	}
	return n, nil
}
