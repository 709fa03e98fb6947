package rlock

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"time"

	"github.com/redis/rueidis"

	"github.com/goredisson/goredisson/internal/backoff"
	"github.com/goredisson/goredisson/internal/keys"
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
// A request whose reply is lost is retried with the same request id, and Redis replays the
// first result (Redisson's unlock latch).
//
// With replica sync on (Options.ReplicaSync), the release is followed by a WAIT for the
// master's replicas, and sent again with the same request id (the latch replays its result)
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
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), l.c.opts.ReleaseTimeout)
	defer cancel()
	watchdog, last := l.c.holds.unlocking(l.name, field)
	sent := time.Now()
	r, err := l.release(ctx, field, watchdog, true)
	if errors.Is(err, errUnconfirmed) {
		l.c.obs.log.Warn("rlock: no replica confirmed an unlock; the master released the hold, but a failover before the replicas catch up can bring it back until its lease ends",
			"lock", l.name, "owner", field, "error", err)
		err = nil
	}
	switch {
	case err != nil:
		return err
	case r == released, r == partial && last && l.kind == readLock:
		// A read release replies 0 while other readers hold the lock, the owner's last
		// read included: the table's count tells.
		l.c.holds.end(l.name, field, ErrReleased)
	case r == notHeld:
		l.c.holds.end(l.name, field, lost(ErrRemoved))
		if !l.readWrite() && l.c.holds.heldByOther(l.name, field) { // a read-write lock's other fields are no misuse
			l.c.obs.log.Warn("rlock: Unlock by an owner that does not hold the lock, while another owner of this client does",
				"lock", l.name, "owner", field)
			return errHeldByOther
		}
		return ErrNotHeld
	case watchdog && l.kind != readLock: // a read release leaves the remaining leases as they are
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

// release runs the release script for field, retrying transport errors with one request id
// until ctx ends. A partial release sets the watchdog lease again when watchdog is true and
// keeps the key's TTL otherwise. With sync and replica sync on, it waits for the replicas
// (see execRelease) and returns the result with an error matching errUnconfirmed when none
// confirmed it. It does not touch the hold registry.
func (l *Lock) release(ctx context.Context, field string, watchdog, sync bool) (releaseResult, error) {
	latch := keys.UnlockLatch(l.name, newRequestID())
	lease := "0" // keep an explicit lease's TTL
	if watchdog {
		lease = l.c.leaseMs
	}
	script, ks, args := l.releaseCall(field, latch, lease)
	var res rueidis.RedisResult
	var unconfirmed error
	retry := backoff.New(10*time.Millisecond, 500*time.Millisecond)
	for {
		res, unconfirmed = l.execRelease(ctx, script, ks, args, sync)
		if !transient(res.Error()) || !retry.Wait(ctx) {
			break
		}
	}
	defer l.c.latches.add(latch)
	n, err := res.AsInt64()
	switch {
	case rueidis.IsRedisNil(err):
		return notHeld, nil
	case err != nil:
		return 0, err
	case n == 1:
		return released, unconfirmed
	}
	return partial, unconfirmed
}

// Messages of the read-write lock's channel (Redisson's LockPubSub constants).
const (
	readReleased  = "0" // UNLOCK_MESSAGE: the last reader left, or the read lock was force-unlocked
	writeReleased = "1" // READ_UNLOCK_MESSAGE: the writer left (readers may all enter)
)

// releaseCall returns the release script of l's kind with its KEYS and ARGV, for field,
// unlock latch latch and lease ("0" keeps the TTL).
func (l *Lock) releaseCall(field, latch, lease string) (lua.Script, []string, []string) {
	latchTTL := strconv.FormatInt(l.c.opts.UnlockLatchTTL.Milliseconds(), 10)
	switch l.kind {
	case fair:
		return l.fairReleaseCall(field, latch, lease)
	case readLock:
		return lua.ReadRelease, []string{l.name, l.channel, keys.ReadTimeoutPrefix(l.name, field), keys.Tagged(l.name), latch},
			append([]string{readReleased, field, latchTTL}, l.c.publish...)
	case writeLock:
		return lua.WriteRelease, []string{l.name, l.channel, latch},
			append([]string{writeReleased, lease, field, latchTTL}, l.c.publish...)
	}
	pub := l.publishes()
	return lua.Release, []string{l.name, l.channel, latch}, append([]string{"0", lease, field, pub[0], latchTTL}, pub[1:]...)
}

// execRelease runs the release script once. With sync and replica sync on, WAIT follows it
// on the same connection, and a release that no replica confirmed is run again there with
// the same latch, which replays the first result and leaves the connection's last write the
// release itself for the next WAIT: replicaSyncTries tries in all, the error of the last
// one returned.
func (l *Lock) execRelease(ctx context.Context, script lua.Script, ks, args []string, sync bool) (rueidis.RedisResult, error) {
	if !sync || l.c.replicas == nil {
		return script.Exec(ctx, l.c.rc, ks, args), nil
	}
	return l.execReleaseSynced(ctx, script, ks, args)
}

// execReleaseSynced is execRelease with replica sync. It copies ks and args, so that they
// stay on the caller's stack on the path without sync.
func (l *Lock) execReleaseSynced(ctx context.Context, script lua.Script, ks, args []string) (res rueidis.RedisResult, unconfirmed error) {
	cks, cargs := slices.Clone(ks), slices.Clone(args)
	l.c.replicas.with(ctx, l.name, func(c *syncedConn) rueidis.RedisResult {
		retry := newSyncRetry()
		for tries := 1; ; tries++ {
			res, unconfirmed = c.exec(ctx, script, cks, cargs)
			if unconfirmed == nil || res.Error() != nil || tries == replicaSyncTries || !retry.Wait(ctx) {
				return res
			}
		}
	})
	return res, unconfirmed
}

// ForceUnlock deletes the lock whoever holds it, Java or Go, and publishes "0" so that
// waiters wake. Holds of this client's owners on it end before the script is sent: their
// renewal stops and their Held contexts end with ErrLockLost and ErrForceUnlocked. Like
// Unlock, it uses ctx's values but not its cancellation (ctx may be one of those Held
// contexts), and is bounded by ReleaseTimeout. It reports whether a lock existed. With
// replica sync on, a WAIT for the master's replicas follows the delete, once: the script is
// not sent again, since a second delete could remove a hold taken in between; when no
// replica confirms it, ForceUnlock logs a warning and reports the master's result.
//
// On a half of a read-write lock it deletes the lock only while it is held in that half's
// mode (Redisson's rule), and the holds of this client's owners end only once it did.
func (l *Lock) ForceUnlock(ctx context.Context) (bool, error) {
	if err := l.check(); err != nil {
		return false, l.fail("ForceUnlock", err)
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), l.c.opts.ReleaseTimeout)
	defer cancel()
	script, ks, args := lua.ForceRelease, []string{l.name, l.channel}, append([]string{"0"}, l.publishes()...)
	switch l.kind {
	case readLock:
		script, args = lua.ReadWriteForceRelease, append([]string{"read", readReleased}, l.c.publish...)
	case writeLock:
		script, args = lua.ReadWriteForceRelease, append([]string{"write", writeReleased}, l.c.publish...)
	case fair:
		script, ks, args = l.fairForceCall()
		l.c.holds.endName(l.name, lost(ErrForceUnlocked))
	default:
		l.c.holds.endName(l.name, lost(ErrForceUnlocked))
	}
	var res rueidis.RedisResult
	var unconfirmed error
	if l.c.replicas == nil {
		res = script.Exec(ctx, l.c.rc, ks, args)
	} else {
		res, unconfirmed = l.c.replicas.exec(ctx, script, ks, args)
	}
	n, err := res.AsInt64()
	if l.readWrite() && n == 1 {
		l.c.holds.endName(l.name, lost(ErrForceUnlocked)) // only once the lock is known deleted
	}
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
