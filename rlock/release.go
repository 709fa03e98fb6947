package rlock

import (
	"context"
	"errors"
	"slices"
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
// A request whose reply is lost is retried with the same request id and counted once: a
// partial release stores its result in Redisson's unlock latch, which the retry replays; a
// release of the owner's last hold writes no latch, and its retry, finding the hold gone,
// reports success. (So when a reply is lost and the hold was also lost meanwhile, Unlock
// of the last hold can report success rather than ErrNotHeld.) The read lock of a
// read-write lock keeps the latch for its last read too (see lua.ReadRelease), so its
// retry always replays.
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
	if !l.c.obs.on() || l.check() != nil {
		return l.fail("Unlock", l.unlock(ctx))
	}
	octx, run := l.c.obs.begin(ctx, l.op(ctx, OpRelease, "Unlock"))
	err := l.unlock(octx)
	run.end(ctx, err)
	return l.fail("Unlock", err)
}

func (l *Lock) unlock(ctx context.Context) error {
	field, err := l.ownerField(ctx)
	if err != nil {
		return err
	}
	dctx := detach(ctx, l.c.opts.ReleaseTimeout)
	ctx = dctx
	watchdog, last, id := l.c.holds.unlocking(l.name, field)
	sent := time.Now()
	r, err := l.release(ctx, field, watchdog, last, true)
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
		l.c.holds.unlocked(l.name, field, id, ErrReleased)
	case r == notHeld:
		l.c.holds.unlocked(l.name, field, id, lost(ErrRemoved))
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

// Values of the release scripts' argument that says whether their request is sent again.
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
	var rc releaseCall // rc's KEYS and ARGV escape: the other kinds' are local variables
	var ks, args []string
	if l.kind == fair || l.readWrite() {
		rc = l.kindReleaseCall(field, latch, lease)
		ks, args = rc.ks, rc.args
	} else { // built here, so that KEYS and ARGV stay on the stack
		pub := l.publishes()
		rc = releaseCall{script: lua.Release, retryArg: 5}
		ks = []string{l.name, l.channel, latch}
		args = append([]string{"0", lease, field, pub[0], l.c.latchMs, firstAttempt}, pub[1:]...)
	}
	script := rc.script
	var res rueidis.RedisResult
	var unconfirmed error
	retry := backoff.New(10*time.Millisecond, 500*time.Millisecond)
	for {
		res, unconfirmed = l.execRelease(ctx, script, ks, args, rc.retryArg, sync)
		if !transient(res.Error()) || !retry.Wait(ctx) {
			break
		}
		args[rc.retryArg] = retried
	}
	n, err := res.AsInt64()
	switch {
	case rueidis.IsRedisNil(err) && args[rc.retryArg] == retried && final && !rc.latchesFull:
		return released, nil // the lost first attempt released it: a full release leaves no latch
	case rueidis.IsRedisNil(err):
		return notHeld, nil
	case err != nil:
		if transient(err) {
			l.c.latches.add(latch) // a partial release may have written it
		}
		return 0, err
	case n == 1:
		if rc.latchesFull {
			l.c.latches.add(latch)
		}
		return released, unconfirmed
	}
	l.c.latches.add(latch)
	return partial, unconfirmed
}

// Messages of the read-write lock's channel (Redisson's LockPubSub constants).
const (
	readReleased  = "0" // UNLOCK_MESSAGE: the last reader left, or the read lock was force-unlocked
	writeReleased = "1" // READ_UNLOCK_MESSAGE: the writer left (readers may all enter)
)

// releaseCall is one kind's release script with its KEYS and ARGV.
type releaseCall struct {
	script   lua.Script
	ks, args []string
	retryArg int // index in args of the retry flag: firstAttempt, then retried
	// latchesFull tells that a full release stores its latch too (the read release: see
	// lua.ReadRelease), so that a retry finding no hold means not held, whatever final says.
	latchesFull bool
}

// kindReleaseCall returns the release script of a fair lock or a half of a read-write lock
// with its KEYS and ARGV, for field, unlock latch latch and lease ("0" keeps the TTL), as a
// first attempt. (The other kinds' lua.Release is built in release.)
func (l *Lock) kindReleaseCall(field, latch, lease string) releaseCall {
	switch l.kind {
	case readLock:
		return releaseCall{lua.ReadRelease, []string{l.name, l.channel, keys.ReadTimeoutPrefix(l.name, field), keys.Tagged(l.name), latch},
			append([]string{readReleased, field, l.c.latchMs, firstAttempt}, l.c.publish...), 3, true}
	case writeLock:
		return releaseCall{lua.WriteRelease, []string{l.name, l.channel, latch},
			append([]string{writeReleased, lease, field, l.c.latchMs, firstAttempt}, l.c.publish...), 4, false}
	}
	return l.fairReleaseCall(field, latch, lease)
}

// execRelease runs the release script once. With sync and replica sync on, WAIT follows it
// on the same connection, and a release that no replica confirmed is sent again there as a
// retry of the same request, which writes nothing (a partial release's latch replays its
// result; a full release finds the field gone, or replays its latch for a read release) and
// so leaves the connection's last write the release itself for the next WAIT:
// replicaSyncTries tries in all. The first try's reply is returned, with the unconfirmed
// error of the last try. retryArg is the index in args of the retry flag.
func (l *Lock) execRelease(ctx context.Context, script lua.Script, ks, args []string, retryArg int, sync bool) (rueidis.RedisResult, error) {
	if !sync || l.c.replicas == nil {
		return script.Exec(ctx, l.c.rc, ks, args), nil
	}
	return l.execReleaseSynced(ctx, script, ks, args, retryArg)
}

// execReleaseSynced is execRelease with replica sync. It copies ks and args, so that they
// stay on the caller's stack on the path without sync. The first reply the script gave is
// kept, also when replicas.with runs fn again after a redirect, and every later send is a
// retry of the request.
func (l *Lock) execReleaseSynced(ctx context.Context, script lua.Script, ks, args []string, retryArg int) (first rueidis.RedisResult, unconfirmed error) {
	cks, cargs := slices.Clone(ks), slices.Clone(args)
	replied := false
	werr := l.c.replicas.with(ctx, l.name, true, func(c *syncedConn) rueidis.RedisResult {
		retry := newSyncRetry()
		for tries := 1; ; tries++ {
			res, err := c.exec(ctx, script, cks, cargs)
			switch {
			case failed(res) && !replied:
				first = res
				return res
			case failed(res):
				return res // unconfirmed stays what the last WAIT said
			case !replied:
				first, replied = res, true
				cargs[retryArg] = retried
			}
			unconfirmed = err
			if err == nil || tries == replicaSyncTries || !retry.Wait(ctx) {
				return res
			}
		}
	})
	if werr != nil { // no turn for a connection before ctx ended: nothing was sent
		return rueidis.NewErrorResult(werr), nil
	}
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
//
// On a half of a read-write lock it deletes the lock only while it is held in that half's
// mode (Redisson's rule), and the holds of this client's owners end only once it did.
func (l *Lock) ForceUnlock(ctx context.Context) (bool, error) {
	if err := l.check(); err != nil {
		return false, l.fail("ForceUnlock", err)
	}
	if !l.c.obs.on() {
		return l.forceUnlock(ctx)
	}
	op := l.op(ctx, OpForceUnlock, "ForceUnlock")
	op.Owner = 0
	octx, run := l.c.obs.begin(ctx, op)
	existed, err := l.forceUnlock(octx)
	if run != nil {
		run.existed = existed
	}
	run.end(ctx, err)
	return existed, err
}

// forceUnlock is ForceUnlock after its check.
func (l *Lock) forceUnlock(ctx context.Context) (bool, error) {
	dctx := detach(ctx, l.c.opts.ReleaseTimeout)
	ctx = dctx
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
