package rlock

import (
	"context"
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
	watchdog := l.c.holds.unlocking(l.name, field)
	sent := time.Now()
	r, err := l.release(ctx, field, watchdog)
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

// release runs the release script for field, retrying transport errors with one request id
// until ctx ends. A partial release sets the watchdog lease again when watchdog is true and
// keeps the key's TTL otherwise. It does not touch the hold registry.
func (l *Lock) release(ctx context.Context, field string, watchdog bool) (releaseResult, error) {
	latch := keys.UnlockLatch(l.name, newRequestID())
	lease := "0" // keep an explicit lease's TTL
	if watchdog {
		lease = l.c.leaseMs
	}
	args := append([]string{"0", lease, field, l.c.publish[0],
		strconv.FormatInt(l.c.opts.UnlockLatchTTL.Milliseconds(), 10)}, l.c.publish[1:]...)
	var res rueidis.RedisResult
	retry := backoff.New(10*time.Millisecond, 500*time.Millisecond)
	for {
		res = lua.Release.Exec(ctx, l.c.rc, []string{l.name, l.channel, latch}, args)
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
		return released, nil
	}
	return partial, nil
}

// ForceUnlock deletes the lock whoever holds it, Java or Go, and publishes "0" so that
// waiters wake. Holds of this client's owners on it end before the script is sent: their
// renewal stops and their Held contexts end with ErrLockLost and ErrForceUnlocked. Like
// Unlock, it uses ctx's values but not its cancellation (ctx may be one of those Held
// contexts), and is bounded by ReleaseTimeout. It reports whether a lock existed.
func (l *Lock) ForceUnlock(ctx context.Context) (bool, error) {
	if err := l.check(); err != nil {
		return false, l.fail("ForceUnlock", err)
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), l.c.opts.ReleaseTimeout)
	defer cancel()
	l.c.holds.endName(l.name, lost(ErrForceUnlocked))
	args := append([]string{"0"}, l.c.publish...)
	n, err := lua.ForceRelease.Exec(ctx, l.c.rc, []string{l.name, l.channel}, args).AsInt64()
	return n == 1, l.fail("ForceUnlock", err)
}

// transient reports whether err is neither a reply (nil included) nor a Redis error: the
// request may not have reached Redis, or its reply was lost.
func transient(err error) bool {
	_, isRedis := rueidis.IsRedisErr(err)
	return err != nil && !isRedis && !rueidis.IsRedisNil(err)
}
