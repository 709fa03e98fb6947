package rlock

import "errors"

var (
	// ErrClosed is returned by every call on a Client, or a Lock of it, after Close.
	ErrClosed = errors.New("rlock: client closed")
	// ErrNilClient is returned by New when the rueidis client is nil.
	ErrNilClient = errors.New("rlock: nil rueidis client")
	// ErrEmptyName is returned by NewLock for an empty lock name.
	ErrEmptyName = errors.New("rlock: empty lock name")
	// ErrInvalidLease is returned for a negative lease, or a lease that is not positive where
	// one is required (LockFor).
	ErrInvalidLease = errors.New("rlock: invalid lease")
	// ErrInvalidWait is returned by TryLock for a negative wait.
	ErrInvalidWait = errors.New("rlock: invalid wait")
	// ErrInvalidOptions is returned by New when an Options field is negative.
	ErrInvalidOptions = errors.New("rlock: invalid options")
	// ErrNoOwner is returned by the calls that act for an owner (acquire, unlock, IsHeld,
	// HoldCount, Held) when ctx carries no owner token; see NewOwner.
	ErrNoOwner = errors.New("rlock: context carries no owner (use rlock.NewOwner)")
	// ErrLocked is returned by TryLock when another owner kept the lock for the whole wait.
	ErrLocked = errors.New("rlock: lock held by another owner")
	// ErrNotHeld is returned by Unlock and Held when the owner does not hold the lock, whether
	// it never did, its lease ran out, or the lock was force-unlocked (Redisson's
	// IllegalMonitorStateException).
	ErrNotHeld = errors.New("rlock: lock not held by this owner")
	// ErrNotReplicated is returned by an acquire with Options.ReplicaAck set when no replica
	// acknowledged the write in time; the hold was given back.
	ErrNotReplicated = errors.New("rlock: no replica acknowledged the acquisition")
	// ErrLockLost is the context.Cause of a context from Lock.Held when the hold ended other
	// than by the owner's Unlock; it wraps the reason.
	ErrLockLost = errors.New("rlock: lock lost")
	// ErrReleased is the context.Cause of a context from Lock.Held after the owner's final
	// Unlock.
	ErrReleased = errors.New("rlock: lock released by its owner")
)
