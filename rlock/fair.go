package rlock

import (
	"context"
	"strconv"
	"time"

	"github.com/redis/rueidis"

	"github.com/goredisson/goredisson/internal/keys"
	"github.com/goredisson/goredisson/lua"
	"github.com/goredisson/goredisson/pubsub"
)

// NewFairLock returns the handle of the fair lock called name, as Java's getFairLock(name):
// the lock of NewLock, on the same hash, reentrant, with the same watchdog, Held contexts,
// replica sync and errors, whose waiters are granted the lock in the order they started
// waiting, Java and Go waiters alike. Like NewLock it never fails.
//
// A waiter that finds the lock held joins a queue (the list "redisson_lock_queue:{name}")
// with a deadline (the sorted set "redisson_lock_timeout:{name}"): the deadline of the
// waiter before it, or the holder's remaining lease when it is first, plus the thread-wait
// time. It sleeps on a channel of its own, "redisson_lock__channel:{name}:<holder field>",
// and a release wakes the first waiter only, so a release costs the same Redis commands
// however many wait. While the lock is free and another waiter is first, the others keep
// sleeping; a first waiter that neither takes the lock nor leaves the queue by its deadline
// (its process died) is dropped from the queue by the next script that runs, and the next
// one woken then.
//
// The thread-wait time is TryLock's wait when it is positive, and Options.FairLockWaitTimeout
// otherwise (Redisson's fairLockWaitTimeout, 5 minutes by default). A waiter that gives up —
// its ctx ends, TryLock's wait passes, an error, Close — leaves the queue before the call
// returns (Redisson's acquireFailed), and wakes the next waiter when it was first and the
// lock is free; TryLock with a zero wait makes one attempt and never queues.
//
// Differences from NewLock: Unlock of a hold whose lease ran out returns ErrNotHeld, as on
// every lock type, where Redisson's fair unlock returns normally; ForceUnlock wakes the
// first waiter only. Use one lock type per name on every side: Java's getLock waiters on the
// same name are not woken by a fair lock's releases.
func (c *Client) NewFairLock(name string) *Lock {
	return &Lock{c: c, name: name, channel: keys.LockChannel(name), kind: fair,
		fair: &fairKeys{queue: keys.FairQueue(name), timeout: keys.FairTimeout(name)}}
}

// fairKeys are the keys a fair lock keeps next to its hash.
type fairKeys struct {
	queue   string // waiters' holder fields, oldest first
	timeout string // each queued field's deadline, epoch ms
}

// fairWait is the fair lock's loop: the shared waiting core on the waiter's own channel,
// where a release wakes it (and no other waiter), with the lock's wake rule. A waiter that
// did not acquire leaves the queue, bounded by ReleaseTimeout whatever ctx says.
func (l *Lock) fairWait(ctx context.Context, field string, wait waitBound, try func() (attempt, error)) error {
	err := l.c.waitFor(ctx, wait, keys.FairWaiterChannel(l.name, field), pubsub.LockRule, try)
	if err != nil && (!wait.limited || wait.d > 0) {
		l.leaveQueue(ctx, field, l.fairWaitMs(wait))
	}
	return err
}

// fairWaitMs returns the thread-wait time of an acquire with bound wait, in ms as the
// scripts take it: the wait when positive, else FairLockWaitTimeout.
func (l *Lock) fairWaitMs(wait waitBound) string {
	d := l.c.opts.FairLockWaitTimeout
	if wait.limited && wait.d > 0 {
		d = wait.d
	}
	return strconv.FormatInt(max(d.Milliseconds(), 1), 10)
}

// fairAcquireCall returns the acquire script of a fair lock with its KEYS and ARGV: the one
// that never queues for a single attempt, the one that queues otherwise.
func (l *Lock) fairAcquireCall(a acquisition) (lua.Script, []string, []string) {
	ks := []string{l.name, l.fair.queue, l.fair.timeout}
	now := strconv.FormatInt(a.sent.UnixMilli(), 10)
	if a.once {
		return lua.FairTryAcquire, ks, []string{a.leaseMs, a.field, now, a.fairWait}
	}
	return lua.FairAcquire, ks, []string{a.leaseMs, a.field, a.fairWait, now}
}

// fairAttempt reads a queued waiter's reply ttl (not acquired): the holder's remaining
// lease, or for a first attempt the time until the waiter before it must have taken the
// lock. A reply of 0 or less means that the lock is free while another waiter is first (or
// that the holder's key has no TTL): the waiter then sleeps until woken or until the first
// waiter's deadline, read from Redis, after which its next attempt drops that waiter if it
// is still there. It sleeps until woken only when there is no deadline to wait for.
func (l *Lock) fairAttempt(ctx context.Context, ttl int64) (attempt, error) {
	if ttl > 0 {
		return attempt{expires: true, ttl: time.Duration(ttl) * time.Millisecond}, nil
	}
	deadline, err := lua.FairHeadDeadline.Exec(ctx, l.c.rc, []string{l.fair.queue, l.fair.timeout}, nil).AsInt64()
	switch {
	case err != nil:
		return attempt{}, err
	case deadline < 0:
		return attempt{}, nil
	}
	return attempt{expires: true, ttl: max(time.Until(time.UnixMilli(deadline)), time.Millisecond)}, nil
}

// leaveQueue takes field out of the fair lock's queue (lua.FairLeave), with the thread-wait
// time waitMs it queued with, bounded by ReleaseTimeout and without ctx's cancellation.
// Leaving is idempotent; with replica sync on it waits for the replicas once. A failure is
// logged: the waiter then stays queued until its deadline passes.
func (l *Lock) leaveQueue(ctx context.Context, field, waitMs string) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), l.c.opts.ReleaseTimeout)
	defer cancel()
	pub := l.publishes()
	ks := []string{l.fair.queue, l.fair.timeout, l.name, l.channel}
	args := append([]string{field, waitMs, pub[0], "0"}, pub[1:]...)
	var err error
	if l.c.replicas == nil {
		err = lua.FairLeave.Exec(ctx, l.c.rc, ks, args).Error()
	} else {
		res, _ := l.c.replicas.exec(ctx, lua.FairLeave, ks, args)
		err = res.Error()
	}
	if err != nil && !rueidis.IsRedisNil(err) {
		l.c.obs.log.Warn("rlock: a fair lock's waiter could not leave the queue; it stays until its deadline", "lock", l.name,
			"waiter", field, "error", err)
	}
}

// fairReleaseCall returns the fair release script with its KEYS and ARGV (see releaseCall).
func (l *Lock) fairReleaseCall(field, latch, lease string) (lua.Script, []string, []string) {
	pub := l.publishes()
	return lua.FairRelease, []string{l.name, l.fair.queue, l.fair.timeout, l.channel, latch},
		append([]string{"0", lease, field, nowMs(), pub[0],
			strconv.FormatInt(l.c.opts.UnlockLatchTTL.Milliseconds(), 10)}, pub[1:]...)
}

// fairForceCall returns the fair force-release script with its KEYS and ARGV.
func (l *Lock) fairForceCall() (lua.Script, []string, []string) {
	pub := l.publishes()
	return lua.FairForceRelease, []string{l.name, l.fair.queue, l.fair.timeout, l.channel},
		append([]string{"0", nowMs(), pub[0]}, pub[1:]...)
}

// nowMs is this host's wall clock in epoch ms, as the fair lock's scripts take it.
func nowMs() string { return strconv.FormatInt(time.Now().UnixMilli(), 10) }
