package rlock

import (
	"context"
	"errors"
	"time"
)

// Observer receives what a Client does, to turn it into metrics and traces: each lock
// operation from its start to its end, the end of each hold, and the Client's counts
// (Client.Stats). The module github.com/goredisson/goredisson/otel implements it with
// OpenTelemetry. Options.Observer nil means none: the operations then cost what they cost
// without one.
//
// Its methods are called synchronously, on the goroutine of the operation or of the hold's
// end; they must be safe for concurrent use, return quickly, and not call the Client. One
// Observer may serve several Clients.
type Observer interface {
	// Attach is called by New with the Client, ready for use, before New returns; an error
	// makes New fail with it.
	Attach(c *Client) error
	// Detach is called by Close, once the Client's holds have ended.
	Detach(c *Client)
	// Start is called when an operation starts, with the caller's ctx. It returns the ctx
	// the operation runs under (ctx, or a context derived from it, such as one carrying a
	// span), and the OpObserver that receives the operation's events and its end; a nil
	// OpObserver ignores the operation.
	Start(ctx context.Context, op Op) (context.Context, OpObserver)
	// HoldEnded is called once for each hold of the Client when it ends. ctx is the one the
	// owner acquired the hold with (its first acquisition), whose request may still be
	// running.
	HoldEnded(ctx context.Context, h HoldEnd)
}

// OpObserver receives the events of one operation and its end.
type OpObserver interface {
	// WokenUp is called each time a waiting acquire is woken by a release message (or by
	// its subscription coming back after a reconnect), before it tries again.
	WokenUp()
	// End is called once, when the operation returns.
	End(e OpEnd)
}

// OpKind is what an operation does.
type OpKind uint8

const (
	// OpAcquire is an acquire of one lock: Lock, LockFor, TryLock, Do, TryDo, and the
	// acquires of a group's members.
	OpAcquire OpKind = iota + 1
	// OpRelease is an Unlock of one lock.
	OpRelease
	// OpForceUnlock is a ForceUnlock.
	OpForceUnlock
	// OpGroupAcquire is an acquire of a MultiLock or a RedLock; its members' acquires are
	// operations of their own, started under its ctx.
	OpGroupAcquire
	// OpGroupRelease is an Unlock of a MultiLock or a RedLock.
	OpGroupRelease
)

// Op describes an operation as it starts.
type Op struct {
	Kind OpKind
	// Name names the operation after the method called: "rlock.Lock", "rlock.TryLock",
	// "rlock.Unlock", "rlock.ForceUnlock", "rlock.MultiLock.TryLock", "rlock.RedLock.Lock"…
	Name string
	// Lock is the lock's name (its Redis key), or a group's name (Name of the MultiLock or
	// RedLock).
	Lock string
	// Type is the lock type: "lock", "fenced", "nonreentrant", "spin", "fair", "read",
	// "write", "multilock" or "redlock".
	Type string
	// ClientID is the Client's id (Client.ID); for a group, its first member's.
	ClientID string
	// Server is the address of the Redis server ("host:port"), the first of the rueidis
	// client's nodes when there are several; empty for a group (see Members).
	Server string
	// Owner is the owner acting (Owner of ctx); zero for ForceUnlock.
	Owner Owner
	// Wait bounds an acquire's wait for other owners; negative means no bound (Lock).
	Wait time.Duration
	// Lease is an acquire's explicit lease; zero means the watchdog, whose lease is
	// Watchdog.
	Lease    time.Duration
	Watchdog time.Duration
	// Members names a group's locks, in order, each as "name@address".
	Members []string
}

// Outcome is how an operation ended.
type Outcome uint8

const (
	// OutcomeDone: the lock was acquired, released or force-unlocked.
	OutcomeDone Outcome = iota
	// OutcomeRefused: another owner held the lock for the whole wait (ErrLocked).
	OutcomeRefused
	// OutcomeCanceled: the caller's ctx ended first.
	OutcomeCanceled
	// OutcomeError: any other error.
	OutcomeError
)

// OpEnd is what an operation did.
type OpEnd struct {
	Outcome Outcome
	Err     error // nil when Outcome is OutcomeDone
	// Attempts counts the acquire script's runs (acquires of one lock).
	Attempts int
	// WakeUps counts the release messages that woke the acquire (OpObserver.WokenUp).
	WakeUps int
	// Waited is the time the acquire spent asleep, waiting for a release or a lease's end.
	Waited time.Duration
	// Token is the fencing token of a fenced lock's acquisition; zero otherwise.
	Token int64
	// Granted counts the members a group acquire holds when it returns.
	Granted int
	// Existed reports, for a ForceUnlock, that there was a lock to delete.
	Existed bool
}

// HoldEnd describes the end of a hold: one owner's hold of one lock through the Client.
type HoldEnd struct {
	Lock  string
	Owner string        // the holder's hash field, "<client id>:<owner>"
	Held  time.Duration // from its first acquisition to its end
	// Cause is ErrReleased when its owner's final Unlock released it, ErrClosed when Close
	// ended it, and otherwise matches ErrLockLost and says how it was lost (ErrLeaseExpired,
	// ErrRemoved, ErrForceUnlocked).
	Cause error
}

// Stats counts a Client's holds and its watchdog's work.
type Stats struct {
	Held            int    // holds now: (lock, owner) pairs acquired and not released
	Renewals        uint64 // leases the watchdog extended, since New
	RenewalFailures uint64 // watchdog renewal calls that failed (retried at the next tick), since New
}

// Stats returns the Client's counts.
func (c *Client) Stats() Stats {
	s := c.wheel.Stats()
	return Stats{Held: c.holds.count(), Renewals: s.Renewed, RenewalFailures: s.Failed}
}

// outcomeOf classifies the error of an operation run for the caller's ctx.
func outcomeOf(ctx context.Context, err error) Outcome {
	switch {
	case err == nil:
		return OutcomeDone
	case errors.Is(err, ErrLocked):
		return OutcomeRefused
	case ctx.Err() != nil:
		return OutcomeCanceled
	}
	return OutcomeError
}
