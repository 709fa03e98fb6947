package rlock

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/rueidis"

	"github.com/goredisson/goredisson/internal/backoff"
	"github.com/goredisson/goredisson/internal/keys"
	"github.com/goredisson/goredisson/lua"
)

// Unlock releases one hold of ctx's owner. After the owner's last hold the lock's key is
// deleted and "0" is published on its channel, which wakes a waiter of every subscribed
// client, Java or Go. With holds remaining, the lock stays held: a watchdog hold keeps the
// watchdog lease, an explicit lease keeps its TTL.
//
// Unlock uses ctx's values but not its cancellation or deadline, so that a release is never
// abandoned half way and works with an ended ctx; it is bounded by ReleaseTimeout instead. The watchdog of the released hold stops before the script is
// sent, even when Unlock fails. A request whose reply is lost is retried with the same
// request id, and Redis replays the first result (Redisson's unlock latch).
//
// It returns nil when the hold was released, ErrNotHeld when the owner did not hold the
// lock (never acquired, lease ran out, or force-unlocked), or the Redis error.
func (l *Lock) Unlock(ctx context.Context) error {
	field, err := l.ownerField(ctx)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), l.c.opts.ReleaseTimeout)
	defer cancel()
	watchdog := l.c.wheel.Remove(l.name, field)
	return l.release(ctx, field, watchdog)
}

// release runs the release script for field, retrying transport errors with one request id
// until ctx ends, and settles the renewal and the Held contexts of the hold.
func (l *Lock) release(ctx context.Context, field string, watchdog bool) error {
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
		l.c.wheel.Drop(l.name, field)
		l.c.obs.released(l.name, field, false)
		l.c.watchers.end(l.name, field, fmt.Errorf("%w: %w", ErrLockLost, ErrNotHeld))
		return ErrNotHeld
	case err != nil:
		return err
	case n == 1:
		l.c.wheel.Drop(l.name, field)
		l.c.obs.released(l.name, field, true)
		l.c.watchers.end(l.name, field, ErrReleased)
	}
	return nil
}

// ForceUnlock deletes the lock whoever holds it, Java or Go, and publishes "0" so that
// waiters wake. This client's watchdog stops renewing the lock, and Held contexts of its
// owners on it end with ErrLockLost. It reports whether a lock existed.
func (l *Lock) ForceUnlock(ctx context.Context) (bool, error) {
	if err := l.check(); err != nil {
		return false, err
	}
	l.c.wheel.Forget(l.name)
	l.c.obs.forgetName(l.name)
	args := append([]string{"0"}, l.c.publish...)
	n, err := lua.ForceRelease.Exec(ctx, l.c.rc, []string{l.name, l.channel}, args).AsInt64()
	l.c.watchers.end(l.name, "", fmt.Errorf("%w: force-unlocked", ErrLockLost))
	return n == 1, err
}

// transient reports whether err is neither a reply (nil included) nor a Redis error: the
// request may not have reached Redis, or its reply was lost.
func transient(err error) bool {
	_, isRedis := rueidis.IsRedisErr(err)
	return err != nil && !isRedis && !rueidis.IsRedisNil(err)
}
