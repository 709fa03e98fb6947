package rlock

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/redis/rueidis"

	"github.com/goredisson/goredisson/internal/backoff"
	"github.com/goredisson/goredisson/lua"
)

// Unlock releases one hold of ctx's owner. After the owner's last hold the lock's key is
// deleted and "0" is published on its channel, which wakes a waiter of every subscribed
// client, Java or Go. With holds remaining, the lock stays held: a watchdog hold gets the
// watchdog lease again, an explicit lease keeps its TTL.
//
// Unlock uses ctx's values but not its cancellation or deadline, so that a release is never
// abandoned half way and works with an ended ctx; it is bounded by ReleaseTimeout instead.
// The watchdog of a final release stops before the script is sent, even when Unlock fails.
// A request whose reply is lost is retried with the same request id and counted once: a
// partial release stores its result in Redisson's unlock latch, which the retry replays; a
// release of the owner's last hold writes no latch, and its retry, finding the hold gone,
// reports success. (So when a reply is lost and the hold was also lost meanwhile, Unlock
// of the last hold can report success rather than ErrNotHeld.)
//
// With replica sync on (Options.ReplicaSync), the release is followed by a WAIT for the
// master's replicas, and sent again as a retry of the same request (which writes nothing)
// while none confirms it, three tries in all. The master has released the hold either way:
// Unlock then returns nil and the Client logs a warning, since only a failover before the
// replicas catch up could bring the hold back, unrenewed, until its lease ends.
//
// It returns nil when the hold was released, ErrNotHeld when the owner did not hold the lock
// (never acquired, lease ran out, or force-unlocked), or the Redis error. When another owner
// of this Client holds the lock, which usually means the wrong owner was passed in ctx, the
// error says so and the Client logs a warning: the real holder's watchdog keeps its lock
// alive until that owner unlocks.
func (l *Lock) Unlock(ctx context.Context) error {
	return l.fail("Unlock", l.unlock(ctx))
}

func (l *Lock) unlock(ctx context.Context) error {
	field, err := l.ownerField(ctx)
	if err != nil {
		return err
	}
	ctx, cancel := detach(ctx, l.c.opts.ReleaseTimeout)
	defer cancel()
	watchdog, final := l.c.holds.unlocking(l.name, field)
	sent := time.Now()
	r, err := l.release(ctx, field, watchdog, final, true)
	if errors.Is(err, errUnconfirmed) {
		l.c.obs.log.Warn("rlock: no replica confirmed an unlock; the master released the hold, but a failover before the replicas catch up can bring it back until its lease ends",
			"lock", l.name, "owner", field, "error", err)
		err = nil
	}
	switch {
	case err != nil:
		return err
	case r == released:
		l.c.holds.end(l.name, field, ErrReleased)
	case r == notHeld:
		l.c.holds.end(l.name, field, lost(ErrRemoved))
		if l.c.holds.heldByOther(l.name, field) {
			l.c.obs.log.Warn("rlock: Unlock by an owner that does not hold the lock, while another owner of this client does",
				"lock", l.name, "owner", field)
			return errHeldByOther
		}
		return ErrNotHeld
	case watchdog:
		l.c.holds.leaseReset(l.name, field, sent, l.c.opts.WatchdogTimeout)
	}
	return nil
}

// releaseResult is what the release script did.
type releaseResult int

const (
	notHeld  releaseResult = iota // the field did not hold the lock
	partial                       // one hold released, others remain
	released                      // the last hold released: key deleted, "0" published
)

// Arguments of the release script that say whether its request is sent again (ARGV[6]).
const (
	firstAttempt = "0"
	retried      = "1"
)

// release runs the release script for field, retrying transport errors with one request id
// until ctx ends. A partial release sets the watchdog lease again when watchdog is true and
// keeps the key's TTL otherwise. final tells that the caller expects this release to be the
// owner's last hold (the table of holds counted one left): a retry that finds neither the
// field nor a latch then reports it released, since the script writes no latch for a full
// release (see lua.Release); a partial release's retry replays its latch. With sync and
// replica sync on, it waits for the replicas (see execRelease) and returns the result with
// an error matching errUnconfirmed when none confirmed it. It does not touch the hold
// registry.
func (l *Lock) release(ctx context.Context, field string, watchdog, final, sync bool) (releaseResult, error) {
	latch := newLatch(l.name)
	lease := "0" // keep an explicit lease's TTL
	if watchdog {
		lease = l.c.leaseMs
	}
	ks := []string{l.name, l.channel, latch}
	pub := l.publishes()
	args := append([]string{"0", lease, field, pub[0],
		l.c.latchMs, firstAttempt}, pub[1:]...)
	var res rueidis.RedisResult
	var unconfirmed error
	retry := backoff.New(10*time.Millisecond, 500*time.Millisecond)
	for {
		res, unconfirmed = l.execRelease(ctx, ks, args, sync)
		if !transient(res.Error()) || !retry.Wait(ctx) {
			break
		}
		args[5] = retried
	}
	n, err := res.AsInt64()
	switch {
	case rueidis.IsRedisNil(err) && args[5] == retried && final:
		return released, nil // the lost first attempt released it: a full release leaves no latch
	case rueidis.IsRedisNil(err):
		return notHeld, nil
	case err != nil:
		if transient(err) {
			l.c.latches.add(latch) // a partial release may have written it
		}
		return 0, err
	case n == 1:
		return released, unconfirmed
	}
	l.c.latches.add(latch)
	return partial, unconfirmed
}

// execRelease runs the release script once. With sync and replica sync on, WAIT follows it
// on the same connection, and a release that no replica confirmed is sent again there as a
// retry of the same request, which writes nothing (a partial release's latch replays its
// result; a full release finds the field gone) and so leaves the connection's last write
// the release itself for the next WAIT: replicaSyncTries tries in all. The first try's
// reply is returned, with the unconfirmed error of the last try.
func (l *Lock) execRelease(ctx context.Context, ks, args []string, sync bool) (rueidis.RedisResult, error) {
	if !sync || l.c.replicas == nil {
		return lua.Release.Exec(ctx, l.c.rc, ks, args), nil
	}
	return l.execReleaseSynced(ctx, ks, args)
}

// execReleaseSynced is execRelease with replica sync. It copies ks and args, so that they
// stay on the caller's stack on the path without sync. The first reply the script gave is
// kept, also when replicas.with runs fn again after a redirect, and every later send is a
// retry of the request.
func (l *Lock) execReleaseSynced(ctx context.Context, ks, args []string) (first rueidis.RedisResult, unconfirmed error) {
	cks, cargs := slices.Clone(ks), slices.Clone(args)
	replied := false
	l.c.replicas.with(ctx, l.name, func(c *syncedConn) rueidis.RedisResult {
		retry := newSyncRetry()
		for tries := 1; ; tries++ {
			res, err := c.exec(ctx, lua.Release, cks, cargs)
			switch {
			case failed(res) && !replied:
				first = res
				return res
			case failed(res):
				return res // unconfirmed stays what the last WAIT said
			case !replied:
				first, replied = res, true
				cargs[5] = retried
			}
			unconfirmed = err
			if err == nil || tries == replicaSyncTries || !retry.Wait(ctx) {
				return res
			}
		}
	})
	return first, unconfirmed
}

// ForceUnlock deletes the lock whoever holds it, Java or Go, and publishes "0" so that
// waiters wake. Holds of this client's owners on it end before the script is sent: their
// renewal stops and their Held contexts end with ErrLockLost and ErrForceUnlocked. Like
// Unlock, it uses ctx's values but not its cancellation (ctx may be one of those Held
// contexts), and is bounded by ReleaseTimeout. It reports whether a lock existed. With
// replica sync on, a WAIT for the master's replicas follows the delete, once: the script is
// not sent again, since a second delete could remove a hold taken in between; when no
// replica confirms it, ForceUnlock logs a warning and reports the master's result.
func (l *Lock) ForceUnlock(ctx context.Context) (bool, error) {
	if err := l.check(); err != nil {
		return false, l.fail("ForceUnlock", err)
	}
	ctx, cancel := detach(ctx, l.c.opts.ReleaseTimeout)
	defer cancel()
	l.c.holds.endName(l.name, lost(ErrForceUnlocked))
	ks, args := []string{l.name, l.channel}, append([]string{"0"}, l.publishes()...)
	if l.c.replicas == nil {
		n, err := lua.ForceRelease.Exec(ctx, l.c.rc, ks, args).AsInt64()
		return n == 1, l.fail("ForceUnlock", err)
	}
	res, unconfirmed := l.c.replicas.exec(ctx, lua.ForceRelease, ks, args)
	n, err := res.AsInt64()
	if err == nil && n == 1 && unconfirmed != nil {
		l.c.obs.log.Warn("rlock: no replica confirmed a force-unlock; the master deleted the lock, but a failover before the replicas catch up can bring it back until its lease ends",
			"lock", l.name, "error", unconfirmed)
	}
	return n == 1, l.fail("ForceUnlock", err)
}

// silent is the publish argument of the release scripts that publishes nothing.
var silent = []string{""}

// publishes returns the publish commands of l's releases: none for a spin lock.
func (l *Lock) publishes() []string {
	if l.kind == spin {
		return silent
	}
	return l.c.publish
}

// transient reports whether err is neither a reply (nil included) nor a Redis error: the
// request may not have reached Redis, or its reply was lost.
func transient(err error) bool {
	_, isRedis := rueidis.IsRedisErr(err)
	return err != nil && !isRedis && !rueidis.IsRedisNil(err)
}
