package rlock

import (
	"errors"
	"fmt"
	"strings"

	"github.com/redis/rueidis"
)

// Errors of calls. Every error a Lock method returns names the method and the lock
// (`rlock: Lock "order:42": held by another owner`) and matches these with errors.Is.
var (
	// ErrClosed is returned by every call on a Client, or a Lock of it, after Close.
	ErrClosed = errors.New("rlock: client closed")
	// ErrNilClient is returned by New when the rueidis client is nil.
	ErrNilClient = errors.New("rlock: nil rueidis client")
	// ErrEmptyName is returned by every call on a Lock whose name is empty.
	ErrEmptyName = errors.New("rlock: empty lock name")
	// ErrInvalidLease is returned for a negative lease, or a lease that is not positive where
	// one is required (LockFor).
	ErrInvalidLease = errors.New("rlock: invalid lease")
	// ErrInvalidWait is returned by TryLock and TryDo for a negative wait.
	ErrInvalidWait = errors.New("rlock: invalid wait")
	// ErrInvalidOptions is returned by New when an Options field is out of range; the error
	// names the field.
	ErrInvalidOptions = errors.New("rlock: invalid options")
	// ErrNoOwner is returned by the calls that act for an owner (acquire, unlock, IsHeld,
	// HoldCount, Held) when ctx carries no owner token; see NewOwner.
	ErrNoOwner = errors.New("rlock: context carries no owner (use rlock.NewOwner)")
	// ErrLocked is returned by TryLock and TryDo when another owner kept the lock for the
	// whole wait.
	ErrLocked = errors.New("rlock: held by another owner")
	// ErrNotHeld is returned by Unlock and Held when the owner does not hold the lock, whether
	// it never did, its lease ran out, or the lock was force-unlocked (Redisson's
	// IllegalMonitorStateException). When another owner of the same Client holds the lock,
	// the error says so.
	ErrNotHeld = errors.New("rlock: not held by this owner")
	// ErrReentry is returned at once, without waiting, by an acquire on a lock from
	// NewNonReentrantLock that ctx's owner already holds (Redisson's
	// IllegalMonitorStateException); the owner's hold is unchanged.
	ErrReentry = errors.New("rlock: non-reentrant lock already held by this owner")
	// ErrNotLocked is returned by RemainTTL when nobody holds the lock.
	ErrNotLocked = errors.New("rlock: not locked")
	// ErrNoExpiry is returned by RemainTTL when the lock's key exists without a TTL, which
	// neither goredisson nor Redisson writes.
	ErrNoExpiry = errors.New("rlock: lock key has no expiry")
	// ErrNotReplicated is returned by an acquire with replica sync on (Options.ReplicaSync)
	// when no replica of the master confirmed the acquisition in any of its tries; each
	// unconfirmed acquisition was given back.
	ErrNotReplicated = errors.New("rlock: no replica confirmed the acquisition")
	// ErrInvalidCount is returned by CountDownLatch.TrySetCount for a count that is not
	// positive.
	ErrInvalidCount = errors.New("rlock: invalid count")
	// ErrInvalidPermits is returned by the Semaphore calls that take a number of permits when
	// it is out of range: not positive (Acquire, TryAcquire, Release), negative
	// (TrySetPermits) or zero (AddPermits), beyond Java's int (as Redisson's semaphores take
	// permits), or, for ExpirableSemaphore's Acquire and TryAcquire, above 5,000 per call (what
	// Redisson's acquire can reclaim at once when they expire).
	ErrInvalidPermits = errors.New("rlock: invalid permits")
	// ErrCrossSlot is returned by the CountDownLatch calls that write (TrySetCount,
	// CountDown, Delete) on a Redis Cluster when the latch's name has a hash tag of its own:
	// its channel "redisson_countdownlatch__channel__{name}" then hashes to another slot, and
	// the latch scripts, which take both as keys, cannot run (Redis refuses Java's with
	// CROSSSLOT too). Await and Count still work.
	ErrCrossSlot = errors.New("rlock: keys in different cluster slots")
	// ErrInvalidPermitID is returned by the ExpirableSemaphore calls that take permit ids for
	// an id that is not 32 hexadecimal digits, the form of every id Java and goredisson give
	// out.
	ErrInvalidPermitID = errors.New("rlock: invalid permit id")
	// ErrPermitNotHeld is returned by ExpirableSemaphore.Release and the lease calls when a
	// permit id is not held: never acquired, already released, or expired and reclaimed
	// (Redisson's IllegalArgumentException "has already been released or doesn't exist").
	ErrPermitNotHeld = errors.New("rlock: permit not held")
	// ErrNoPermission is returned when Redis refused a command, key or channel to the
	// connection's ACL user (a NOPERM reply, or a script's call refused). The error says what
	// was refused (see docs/SECURITY.md for what each type needs); errors.As with
	// *rueidis.RedisError gives Redis's own reply.
	ErrNoPermission = errors.New("rlock: no permission (Redis ACL)")
	// ErrNoPermits is returned by Semaphore.TryAcquire and ExpirableSemaphore.TryAcquire when
	// the permits asked for did not become available within the wait. It matches ErrLocked
	// too, so that one check serves every Try of the package.
	ErrNoPermits error = notAvailable("rlock: not enough permits available")
	// ErrUpgrade is returned at once, without waiting, by the write lock's acquires
	// (WriteLock().Lock, TryLock, LockFor, Do) when ctx's owner holds the read lock of the
	// same read-write lock through the same Client and not its write lock: its own read
	// would keep it waiting for ever (Redisson's waits). Release the read first; a writer
	// may take the read lock and then release its write (a downgrade).
	ErrUpgrade = errors.New("rlock: read lock held by this owner: it cannot take the write lock (no upgrade)")
	// ErrWrongType is returned when the name holds a key that another type wrote, which the
	// call leaves untouched: the read or the write lock of a read-write lock on a name a
	// plain, fair, fenced, spin or non-reentrant lock holds (Java's or Go's), or one of those
	// locks on a read-write lock's name; any lock on a name that holds a semaphore, a latch
	// or another Redis type, and a semaphore or latch on a lock's name (Redis's WRONGTYPE).
	// Waiting does not change it: group acquires end on it too.
	ErrWrongType = errors.New("rlock: name in use by another lock type")
)

// Causes of a context from Lock.Held. A hold ends with ErrReleased after the owner's final
// Unlock; otherwise it is lost, and the cause matches ErrLockLost and one of the reasons
// below.
var (
	// ErrReleased: the owner's final Unlock released the hold.
	ErrReleased = errors.New("rlock: released by its owner")
	// ErrLockLost: the hold ended other than by the owner's Unlock. It always comes with one
	// of ErrLeaseExpired, ErrRemoved, ErrForceUnlocked or ErrClosed.
	ErrLockLost = errors.New("rlock: lock lost")
	// ErrLeaseExpired: the hold's lease may have run out on the server: its safe-until time
	// passed without a renewal (Redis unreachable or slow), or its explicit lease ended.
	ErrLeaseExpired = errors.New("rlock: lease may have expired (not renewed in time)")
	// ErrRemoved: Redis no longer has the owner's hold, though the owner did not release it
	// (another client force-unlocked it, the key was deleted, or a failover lost it).
	ErrRemoved = errors.New("rlock: hold removed from Redis by someone else")
	// ErrForceUnlocked: this Client force-unlocked the lock.
	ErrForceUnlocked = errors.New("rlock: force-unlocked")
)

// notAvailable is a sentinel that also matches ErrLocked: the Try calls that are refused
// something other than a lock.
type notAvailable string

func (e notAvailable) Error() string { return string(e) }

func (e notAvailable) Is(target error) bool { return target == ErrLocked }

// lost returns the cause of a hold lost for reason.
func lost(reason error) error { return fmt.Errorf("%w: %w", ErrLockLost, reason) }

// errHeldByOther is what Unlock returns when another owner of the same Client holds the lock.
var errHeldByOther = fmt.Errorf("%w: held by another owner of this client", ErrNotHeld)

// opError is an error of a call on a Lock: the method, the lock's name and the cause.
type opError struct {
	op, name string
	err      error
}

func (e *opError) Error() string {
	return fmt.Sprintf("rlock: %s %q: %s", e.op, e.name, strings.TrimPrefix(e.err.Error(), "rlock: "))
}

func (e *opError) Unwrap() error { return e.err }

// fail wraps a non-nil err of method op on l.
func (l *Lock) fail(op string, err error) error {
	if err == nil {
		return nil // the permission needs are built only for an error
	}
	return failOn(op, l.name, l.c.classify(l.needs(), err))
}

// wrongType returns err matching ErrWrongType (and wrapping it) when it is Redis's, or a
// lock script's, WRONGTYPE reply (Redis 6.2 wraps a script's in "ERR Error running
// script"); otherwise err unchanged.
func wrongType(err error) error {
	var re *rueidis.RedisError
	if errors.As(err, &re) && strings.Contains(re.Error(), "WRONGTYPE") && !errors.Is(err, ErrWrongType) {
		return &typeError{err}
	}
	return err
}

// typeError is a WRONGTYPE reply: the name holds another lock type's key.
type typeError struct{ err error }

func (e *typeError) Error() string {
	return fmt.Sprintf("%s: %v", strings.TrimPrefix(ErrWrongType.Error(), "rlock: "), e.err)
}

func (e *typeError) Is(target error) bool { return target == ErrWrongType }

func (e *typeError) Unwrap() error { return e.err }

// failOn wraps a non-nil err of method op on the object called name.
func failOn(op, name string, err error) error {
	if err == nil {
		return nil
	}
	return &opError{op: op, name: name, err: err}
}

// Errors of groups of locks (NewMultiLock, NewRedLock).
var (
	// ErrNoMembers is returned by NewMultiLock and NewRedLock when no lock is given, or a nil
	// one.
	ErrNoMembers = errors.New("rlock: group without locks")
	// ErrDuplicateMember is returned by NewMultiLock and NewRedLock when the same lock (one
	// name on one rueidis client) is given twice: the group would wait for itself.
	ErrDuplicateMember = errors.New("rlock: the same lock twice in a group")
	// ErrMixedMembers is returned by NewMultiLock and NewRedLock when the locks are of
	// different types (NewLock, NewNonReentrantLock, NewSpinLock), or come from Clients with
	// different watchdog leases (Options.WatchdogTimeout): a group has one kind of lease.
	ErrMixedMembers = errors.New("rlock: group mixes lock types or watchdog leases")
	// ErrNoQuorum is returned by a RedLock acquire that did not get a majority of its locks
	// within the wait because so many of them failed (servers down or not answering) that
	// no majority was left; the error joins the locks' own errors. When other owners made
	// the difference, the acquire returns ErrLocked instead.
	ErrNoQuorum = errors.New("rlock: no majority of the group's locks acquired")
)
