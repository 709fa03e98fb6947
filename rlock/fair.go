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
// where a release wakes it (and no other waiter), with the lock's wake rule. An attempt that
// finds the lock free while another waiter is first (reply 0) is followed by a pause of
// behindPause instead of the holder's lease. A waiter that did not acquire leaves the
// queue, bounded by ReleaseTimeout whatever ctx says.
func (l *Lock) fairWait(ctx context.Context, field string, wait waitBound, try func() (attempt, error)) error {
	var b behind
	fairTry := func() (attempt, error) {
		a, err := try()
		if err != nil || a.acquired || a.expires {
			b.n = 0
			return a, err
		}
		return l.behindPause(ctx, &b)
	}
	err := l.c.waitFor(ctx, wait, keys.FairWaiterChannel(l.name, field), pubsub.LockRule, fairTry)
	if err != nil && (!wait.limited || wait.d > 0) {
		l.leaveQueue(ctx, field, l.fairWaitMs(wait))
	}
	return err
}

// behindFirstPause is the first pause of a waiter that found the fair lock free while
// another waiter is first; each next one in a row is twice the last.
const behindFirstPause = 10 * time.Millisecond

// behind is a waiter's run of attempts that found the lock free while another waiter was
// first, and that waiter's deadline as last read.
type behind struct {
	n        int
	deadline time.Time // zero: none read, or the queue has none
}

// behindPause returns the attempt (not acquired) of a waiter that found the lock free while
// another waiter is first, or the lock's key without a TTL. That waiter should take the
// lock within a round trip (it was woken, or its timer fired); once it holds it, the next
// attempt reads its lease. But nobody is told when it takes the lock, and if it died it never
// will: it is dropped only when its deadline has passed. So the waiter sleeps, unless woken,
// for 10 ms, then twice as long after each such attempt in a row, never past the first
// waiter's deadline (read from Redis, lua.FairHeadDeadline, at the first such attempt and
// again once the one read has passed): a handful of attempts while the first waiter takes
// the lock, about log2(deadline / 10 ms) in all behind a waiter that died. Redisson's waiter
// retries without pausing.
func (l *Lock) behindPause(ctx context.Context, b *behind) (attempt, error) {
	b.n++
	if b.n == 1 || (!b.deadline.IsZero() && !time.Now().Before(b.deadline)) {
		ms, err := lua.FairHeadDeadline.Exec(ctx, l.c.rc, []string{l.fair.queue, l.fair.timeout}, nil).AsInt64()
		if err != nil {
			return attempt{}, err
		}
		b.deadline = time.Time{}
		if ms >= 0 {
			b.deadline = time.UnixMilli(ms)
		}
	}
	pause := behindFirstPause << min(b.n-1, 30)
	if !b.deadline.IsZero() {
		pause = min(pause, max(time.Until(b.deadline), time.Millisecond))
	}
	return attempt{expires: true, ttl: pause}, nil
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

// leaveQueue takes field out of the fair lock's queue (lua.FairLeave), with the thread-wait
// time waitMs it queued with, bounded by ReleaseTimeout and without ctx's cancellation.
// Leaving is idempotent; with replica sync on it waits for the replicas once. A failure is
// logged: the waiter then stays queued until its deadline passes.
func (l *Lock) leaveQueue(ctx context.Context, field, waitMs string) {
	dctx := detach(ctx, l.c.opts.ReleaseTimeout)
	ctx = dctx
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
func (l *Lock) fairReleaseCall(field, latch, lease string) releaseCall {
	pub := l.publishes()
	return releaseCall{lua.FairRelease, []string{l.name, l.fair.queue, l.fair.timeout, l.channel, latch},
		append([]string{"0", lease, field, nowMs(), pub[0], l.c.latchMs, firstAttempt}, pub[1:]...), 6, false}
}

// fairForceCall returns the fair force-release script with its KEYS and ARGV.
func (l *Lock) fairForceCall() (lua.Script, []string, []string) {
	pub := l.publishes()
	return lua.FairForceRelease, []string{l.name, l.fair.queue, l.fair.timeout, l.channel},
		append([]string{"0", nowMs(), pub[0]}, pub[1:]...)
}

// nowMs is this host's wall clock in epoch ms, as the fair lock's scripts take it.
func nowMs() string { return strconv.FormatInt(time.Now().UnixMilli(), 10) }
