// Package rlock is a reentrant distributed lock that shares its Redis keys with Java
// Redisson's RLock: a Go service and a Java service locking "order:42" exclude each other,
// wake each other's waiters, and cannot release each other's holds.
//
// # Which lock do I need
//
//	you need                                          Go                             Java (Redisson)
//	one holder, re-entrant, kept alive by a watchdog  Client.NewLock                 getLock
//	the same, with a fencing token                    Client.NewFencedLock           getFencedLock
//	a lock its holder cannot take twice               Client.NewNonReentrantLock     getNonReentrantLock
//	first come, first served                          Client.NewFairLock             getFairLock
//	many readers or one writer                        Client.NewReadWriteLock        getReadWriteLock
//	no pub/sub (polling with backoff)                 Client.NewSpinLock             getSpinLock
//	at most N holders                                 Client.NewSemaphore            getSemaphore
//	at most N holders, permits with a lease           Client.NewExpirableSemaphore   getPermitExpirableSemaphore
//	wait until N things happened                      Client.NewCountDownLatch       getCountDownLatch
//	several locks, all or none                        NewMultiLock                   RedissonMultiLock
//	one lock on independent servers, a majority       NewRedLock                     RedissonRedLock
//
// One owner per task (NewOwner): goroutines sharing an owner are one holder, and all get in.
//
// # Getting it, or not
//
// Every acquire returns nil exactly when the caller got what it asked for. The calls that
// wait at most a given time fail the same way when they do not get it: an error matching
// ErrLocked.
//
//	call                                      returns                  not within the wait
//	Lock.TryLock, TryDo (every lock type)     error                    ErrLocked
//	FencedLock.TryLock                        token, error             ErrLocked
//	MultiLock.TryLock                         error                    ErrLocked
//	RedLock.TryLock                           validity, error          ErrLocked (ErrNoQuorum: too many servers failed)
//	Semaphore.TryAcquire                      error                    ErrNoPermits (matches ErrLocked)
//	ExpirableSemaphore.TryAcquire             ids, error               ErrNoPermits (matches ErrLocked)
//
// Lock, Acquire and Await wait until they get it or ctx ends (an error matching ctx.Err(),
// and only then). Other failures are their own sentinels: ErrNoOwner, ErrReentry,
// ErrUpgrade, ErrWrongType, ErrNoPermission, ErrClosed, the ErrInvalid… of bad input; a
// connection failure is returned as it is (a waiter first rides it out for up to 30 s).
// TrySetPermits, TrySetCount and TryRelease are "set or release if": they report whether
// they did, with no wait.
//
// # Clients, locks and owners
//
// A Client wraps the caller's rueidis.Client (single server, Sentinel or Cluster) with a
// random client id, a watchdog and shared pub/sub subscriptions. NewLock returns a cheap
// handle per lock name; the name is the Redis key, exactly as Java's getLock(name) uses it.
//
// Redisson identifies a holder by its Java thread. Go has no goroutine identity, so a holder
// here is an Owner carried in the context.Context:
//
//	ctx = rlock.NewOwner(ctx) // mint an owner for this task
//	if err := l.Lock(ctx); err != nil { ... }
//	defer l.Unlock(ctx)
//
// Calls with contexts carrying the same owner re-enter (the hold count goes up; each Lock
// needs its Unlock); a different owner waits. An owner is handed to another goroutine by
// passing the ctx, or with WithOwner(otherCtx, o) where o came from OwnerFrom. A call that
// acts for an owner returns ErrNoOwner when its ctx carries none: rlock never invents an
// owner, since an invented one could never unlock.
//
// In Redis the lock is a hash at the lock name whose field "<client-uuid>:<owner>" maps to
// the hold count, with the lease as the key's TTL; a full release deletes the key and
// publishes "0" on "redisson_lock__channel:{name}". docs/PROTOCOL.md has the details.
//
// # Contract
//
//   - err == nil from Lock, LockFor or TryLock means the owner holds the lock; any error
//     means it does not. If ctx ends while an attempt is in flight, the call returns
//     ctx.Err() when that attempt's reply arrives, one round trip later (bounded by
//     Options.ReleaseTimeout on a stalled connection), and a hold taken by that attempt is
//     given back in the background.
//   - Lock and TryLock with a zero lease use the watchdog: the key lives WatchdogTimeout
//     (30 s by default) and is renewed every third of it until the final Unlock. Explicit
//     leases are never renewed.
//   - Waiting never polls (but on a spin lock): a waiter sleeps until a release is
//     published, bounded by the holder's remaining TTL in case a message is lost.
//   - Unlock by an owner that does not hold the lock returns ErrNotHeld and changes nothing.
//   - With Sentinel and Cluster clients every lock write waits for the master's replicas, as
//     Redisson does by default; an acquisition no replica confirmed is given back, and the
//     acquire returns ErrNotReplicated after its tries (Options.ReplicaSync).
//   - Held returns a context that is cancelled when the hold is lost, so that work under
//     the lock can stop. Loss is learnt, not prevented: see docs/RELIABILITY.md for what a
//     lease-based lock can and cannot promise.
//
// # Other lock types
//
// NewFencedLock returns a FencedLock (Java's getFencedLock): the same lock, whose every
// acquisition returns a fencing token larger than all earlier ones for that name, for
// resources that must refuse writes from a holder paused past its lease.
// NewNonReentrantLock returns a Lock that its owner cannot take twice (Java's
// getNonReentrantLock): a second acquisition returns ErrReentry at once. NewSpinLock
// returns a Lock without pub/sub (Java's getSpinLock): its waiters poll with an
// exponential backoff, and its releases publish nothing. NewFairLock returns a Lock whose
// waiters are granted it in the order they started waiting, Java's and Go's alike (Java's
// getFairLock): they queue in Redis, and a release wakes the first one only.
// NewReadWriteLock returns a ReadWriteLock (Java's getReadWriteLock), whose ReadLock and
// WriteLock are Locks on one hash: readers of any client share it, a writer has it alone,
// and a writer may also read.
//
// # Synchronizers
//
// NewCountDownLatch returns a CountDownLatch (Java's getCountDownLatch): TrySetCount,
// CountDown, Count, and Await, which returns once the count reaches zero. NewSemaphore
// returns a Semaphore (Java's getSemaphore): permits that Acquire and TryAcquire take and
// Release gives back, whoever took them. Neither has owners; their waiters sleep until the
// latch's or the semaphore's message, without polling. NewExpirableSemaphore returns an
// ExpirableSemaphore (Java's getPermitExpirableSemaphore): permits with ids and a lease each,
// released by id; a permit not released by the end of its lease comes back, and a waiter
// wakes by itself at the earliest expiry.
//
// Every method is safe for concurrent use.
package rlock
