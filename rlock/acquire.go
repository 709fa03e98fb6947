package rlock

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/redis/rueidis"

	"github.com/goredisson/goredisson/internal/backoff"
	"github.com/goredisson/goredisson/lua"
	"github.com/goredisson/goredisson/pubsub"
)

// Lock acquires the lock for ctx's owner with the watchdog: the lease is the client's
// WatchdogTimeout and is renewed every third of it until the owner's final Unlock, so the
// lock lives as long as its holder does. It re-enters when the owner already holds the lock.
//
// It blocks until the lock is acquired or ctx ends; while another owner holds it, it sleeps
// until a release is published (or the holder's lease runs out) and does not poll. It
// returns nil if and only if the owner now holds the lock. When ctx ends it returns an error
// matching ctx.Err() and leaves nothing held: a hold the script took after the caller gave
// up is given back in the background. A connection error during an attempt is returned and
// not retried, since the attempt may or may not have taken effect; such a hold is never
// renewed, so it ends with its lease. With replica sync on (Options.ReplicaSync), an
// acquisition counts only once a replica of the master confirmed it; when none did in any
// of its tries, it returns ErrNotReplicated and the owner holds nothing it did not hold
// before.
func (l *Lock) Lock(ctx context.Context) error {
	return l.fail("Lock", l.acquire(ctx, unbounded, 0))
}

// LockFor acquires the lock like Lock, but with an explicit lease that is never renewed: the
// lock is released by the owner's Unlock or when lease runs out, whichever is first. On a
// lock the owner already holds, it sets the lease to lease, shorter or longer. It returns
// ErrInvalidLease unless lease is positive.
func (l *Lock) LockFor(ctx context.Context, lease time.Duration) error {
	if lease <= 0 {
		return l.fail("LockFor", ErrInvalidLease)
	}
	return l.fail("LockFor", l.acquire(ctx, unbounded, lease))
}

// TryLock acquires the lock like Lock, waiting at most wait for another owner to release it:
// zero means a single attempt. lease is the explicit lease; zero means the watchdog.
//
// It returns nil when the owner now holds the lock, ErrLocked when the wait passed with the
// lock held by another owner, an error matching ctx.Err() when ctx ended first, and
// ErrInvalidWait or ErrInvalidLease for negative values.
func (l *Lock) TryLock(ctx context.Context, wait, lease time.Duration) error {
	if err := checkTry(wait, lease); err != nil {
		return l.fail("TryLock", err)
	}
	return l.fail("TryLock", l.acquire(ctx, bounded(wait), lease))
}

func checkTry(wait, lease time.Duration) error {
	if wait < 0 {
		return ErrInvalidWait
	}
	if lease < 0 {
		return ErrInvalidLease
	}
	return nil
}

// acquire checks the call, runs the waiting core (waitFor) and records the outcome. A zero
// lease means the watchdog.
func (l *Lock) acquire(ctx context.Context, wait waitBound, lease time.Duration) error {
	field, err := l.ownerField(ctx)
	if err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	start := time.Now()
	err = l.wait(ctx, field, wait, lease)
	l.c.obs.acquireDone(ctx, start, err)
	return err
}

// wait is acquire's loop, after the arguments were checked: the shared waiting core with
// the reentrant lock's channel and wake rule.
func (l *Lock) wait(ctx context.Context, field string, wait waitBound, lease time.Duration) error {
	return l.c.waitFor(ctx, wait, l.channel, pubsub.LockRule, func() (attempt, error) {
		return l.try(ctx, field, lease)
	})
}

// try runs the acquire script. An acquisition is recorded in the hold registry (and a
// watchdog hold registered for renewal) before try returns. With replica sync, an
// acquisition that no replica confirmed has been given back and is tried again after a
// pause, replicaSyncTries tries in all; ErrNotReplicated when none was confirmed.
func (l *Lock) try(ctx context.Context, field string, lease time.Duration) (attempt, error) {
	watchdog := lease == 0
	if watchdog {
		lease = l.c.opts.WatchdogTimeout
	}
	a := acquisition{field: field, lease: lease, leaseMs: strconv.FormatInt(max(lease.Milliseconds(), 1), 10)}
	var retry *backoff.Backoff
	for tries := 1; ; tries++ {
		a.sent = time.Now()
		res, err := l.evalAcquire(ctx, a)
		if err != nil {
			return attempt{}, err
		}
		ms, err := res.AsInt64()
		switch {
		case rueidis.IsRedisNil(err):
			l.c.holds.acquired(l.name, field, a.sent, lease, watchdog)
			return attempt{acquired: true}, nil
		case errors.Is(err, errUnconfirmed):
			if tries == replicaSyncTries {
				return attempt{}, ErrNotReplicated
			}
			if retry == nil {
				retry = newSyncRetry()
			}
			if !retry.Wait(ctx) {
				return attempt{}, ctx.Err()
			}
			continue
		case err != nil:
			return attempt{}, err
		case ms < 0:
			return attempt{}, nil
		}
		return attempt{expires: true, ttl: time.Duration(ms) * time.Millisecond}, nil
	}
}

// acquisition is one run of the acquire script.
type acquisition struct {
	field   string
	lease   time.Duration // the TTL the script sets
	leaseMs string        // lease as the script takes it
	sent    time.Time     // when the script was sent, at the latest
}

// evalAcquire runs the acquire script. If ctx ends before the reply arrives, it returns
// ctx.Err() at once; the reply is then awaited in the background (at most ReleaseTimeout)
// and a hold the script took is given back, so that an abandoned acquire never leaves the
// lock held or renewed.
func (l *Lock) evalAcquire(ctx context.Context, a acquisition) (rueidis.RedisResult, error) {
	if ctx.Done() == nil {
		return l.runAcquire(ctx, a), nil
	}
	const (
		pending int32 = iota
		delivered
		abandoned
	)
	var state atomic.Int32
	reply := make(chan rueidis.RedisResult, 1)
	started := l.c.goBackground(func() {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), l.c.opts.ReleaseTimeout)
		defer cancel()
		res := l.runAcquire(rctx, a)
		reply <- res
		if !state.CompareAndSwap(pending, delivered) && rueidis.IsRedisNil(res.Error()) {
			err := l.giveBack(rctx, a)
			l.c.obs.log.Debug("rlock: gave back a hold taken after its caller gave up", "lock", l.name, "holder", a.field, "error", err)
		}
	})
	if !started {
		return rueidis.RedisResult{}, ErrClosed
	}
	select {
	case res := <-reply:
		return res, nil
	case <-ctx.Done():
		if state.CompareAndSwap(pending, abandoned) {
			return rueidis.RedisResult{}, ctx.Err()
		}
		return <-reply, nil
	}
}

// runAcquire runs the acquire script. With replica sync it waits for the master's replicas
// on the same connection, and gives back an acquisition that none of them confirmed: the
// reply is then errUnconfirmed, or ErrNotReplicated with the error of a give-back that
// failed (that hold then ends with its lease, never renewed).
func (l *Lock) runAcquire(ctx context.Context, a acquisition) rueidis.RedisResult {
	keys, args := []string{l.name}, []string{a.leaseMs, a.field}
	if l.c.replicas == nil {
		return lua.Acquire.Exec(ctx, l.c.rc, keys, args)
	}
	res, unconfirmed := l.c.replicas.exec(ctx, lua.Acquire, keys, args)
	if unconfirmed == nil || !rueidis.IsRedisNil(res.Error()) {
		return res // confirmed, not acquired, or failed
	}
	err := l.giveBack(ctx, a)
	l.c.obs.log.Debug("rlock: gave back an acquisition no replica confirmed", "lock", l.name, "holder", a.field,
		"cause", unconfirmed, "error", err)
	if err != nil {
		return rueidis.NewErrorResult(fmt.Errorf("%w; giving the hold back failed: %w", ErrNotReplicated, err))
	}
	return rueidis.NewErrorResult(unconfirmed)
}

// giveBack releases acquisition a, which its caller does not keep, bounded by
// ReleaseTimeout and without waiting for replicas. When the owner held the lock before (a
// re-entry), that hold stays, with the TTL a set, and the registry's safe-until follows it.
func (l *Lock) giveBack(ctx context.Context, a acquisition) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), l.c.opts.ReleaseTimeout)
	defer cancel()
	r, err := l.release(ctx, a.field, false, false)
	if err == nil && r == partial {
		l.c.holds.leaseReset(l.name, a.field, a.sent, a.lease)
	}
	return err
}
