package rlock

import (
	"context"
	"errors"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/redis/rueidis"

	"github.com/goredisson/goredisson/lua"
	"github.com/goredisson/goredisson/pubsub"
)

// Lock acquires the lock for ctx's owner with the watchdog: the lease is the client's
// WatchdogTimeout and is renewed every third of it until the owner's final Unlock, so the
// lock lives as long as its holder does. It re-enters when the owner already holds the lock.
//
// It blocks until the lock is acquired or ctx ends; while another owner holds it, it sleeps
// until a release is published (or the holder's lease runs out) and does not poll. It
// returns nil if and only if the owner now holds the lock. When ctx ends it returns
// ctx.Err() and leaves nothing held: a hold the script took after the caller gave up is
// given back in the background. A connection error during an attempt is returned as is and
// not retried, since the attempt may or may not have taken effect; such a hold is never
// renewed, so it ends with its lease.
func (l *Lock) Lock(ctx context.Context) error {
	return l.acquire(ctx, -1, 0)
}

// LockFor acquires the lock like Lock, but with an explicit lease that is never renewed: the
// lock is released by the owner's Unlock or when lease runs out, whichever is first. It
// returns ErrInvalidLease unless lease is positive.
func (l *Lock) LockFor(ctx context.Context, lease time.Duration) error {
	if lease <= 0 {
		return ErrInvalidLease
	}
	return l.acquire(ctx, -1, lease)
}

// TryLock acquires the lock like Lock, waiting at most wait for another owner to release it:
// zero means a single attempt. lease is the explicit lease; zero means the watchdog.
//
// It returns nil when the owner now holds the lock, ErrLocked when the wait passed with the
// lock held by another owner, ctx.Err() when ctx ended first, ErrInvalidWait or
// ErrInvalidLease for negative values.
func (l *Lock) TryLock(ctx context.Context, wait, lease time.Duration) error {
	if wait < 0 {
		return ErrInvalidWait
	}
	if lease < 0 {
		return ErrInvalidLease
	}
	return l.acquire(ctx, wait, lease)
}

// acquire runs Redisson's waiter loop: try, subscribe, try again, then sleep until woken or
// until min(holder's TTL, remaining wait) has passed, and try again. wait < 0 means no bound;
// lease 0 means the watchdog.
func (l *Lock) acquire(ctx context.Context, wait, lease time.Duration) error {
	field, err := l.ownerField(ctx)
	if err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	start := time.Now()
	err = l.wait(ctx, field, wait, lease)
	l.c.obs.acquired(ctx, l.name, field, start, lease, err)
	return err
}

// wait is acquire's loop, after the arguments were checked.
func (l *Lock) wait(ctx context.Context, field string, wait, lease time.Duration) error {
	var deadline time.Time
	if wait >= 0 {
		deadline = time.Now().Add(wait)
	}
	ttl, err := l.try(ctx, field, lease)
	if err != nil || ttl == acquired {
		return err
	}
	if wait == 0 {
		return ErrLocked
	}
	sctx := ctx
	if !deadline.IsZero() {
		var cancel context.CancelFunc
		sctx, cancel = context.WithDeadline(ctx, deadline)
		defer cancel()
	}
	w, err := l.c.subs.Subscribe(sctx, l.channel, pubsub.LockRule)
	if err != nil {
		return l.waitError(ctx, err)
	}
	defer w.Close()
	for {
		ttl, err := l.try(ctx, field, lease)
		if err != nil || ttl == acquired {
			return err
		}
		sleep := ttl // negative: the holder's key has no TTL, wait for a message only
		if !deadline.IsZero() {
			left := time.Until(deadline)
			if left <= 0 {
				return ErrLocked
			}
			if sleep < 0 || left < sleep {
				sleep = left
			}
		}
		if err := w.Wait(ctx, sleep); err != nil {
			return l.waitError(ctx, err)
		}
	}
}

// waitError maps an error of the waiting phase to what acquire returns.
func (l *Lock) waitError(ctx context.Context, err error) error {
	switch {
	case ctx.Err() != nil:
		return ctx.Err()
	case errors.Is(err, context.DeadlineExceeded):
		return ErrLocked // our own wait bound, not the caller's
	case errors.Is(err, pubsub.ErrClosed):
		return ErrClosed
	}
	return err
}

// acquired is the TTL that try returns when the lock was taken.
const acquired time.Duration = -1 << 62

// try runs the acquire script once. It returns acquired, or the holder's remaining TTL
// (negative when the key has no TTL). A watchdog hold is registered for renewal before try
// returns.
func (l *Lock) try(ctx context.Context, field string, lease time.Duration) (time.Duration, error) {
	leaseMs := l.c.leaseMs
	if lease > 0 {
		leaseMs = strconv.FormatInt(max(lease.Milliseconds(), 1), 10)
	}
	res, err := l.evalAcquire(ctx, field, leaseMs, lease == 0)
	if err != nil {
		return 0, err
	}
	ms, err := res.AsInt64()
	switch {
	case rueidis.IsRedisNil(err):
		if lease == 0 {
			l.c.wheel.Add(l.name, field)
		}
		return acquired, nil
	case err != nil:
		return 0, err
	case ms < 0:
		return -1, nil
	}
	return time.Duration(ms) * time.Millisecond, nil
}

// evalAcquire runs the acquire script. If ctx ends before the reply arrives, it returns
// ctx.Err() at once; the reply is then awaited in the background (at most ReleaseTimeout)
// and a hold the script took is given back, so that an abandoned acquire never leaves the
// lock held or renewed.
func (l *Lock) evalAcquire(ctx context.Context, field, leaseMs string, watchdog bool) (rueidis.RedisResult, error) {
	keys, args := []string{l.name}, []string{leaseMs, field}
	if ctx.Done() == nil {
		return l.runAcquire(ctx, keys, args, watchdog), nil
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
		res := l.runAcquire(rctx, keys, args, watchdog)
		reply <- res
		if !state.CompareAndSwap(pending, delivered) && rueidis.IsRedisNil(res.Error()) {
			err := l.release(rctx, field, watchdog)
			l.c.obs.log.Debug("rlock: gave back a hold taken after its caller gave up", "lock", l.name, "holder", field, "error", err)
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

// runAcquire runs the acquire script; with Options.ReplicaAck it pipelines WAIT after it on
// the same connection and gives the hold back when no replica acknowledged it.
func (l *Lock) runAcquire(ctx context.Context, keys, args []string, watchdog bool) rueidis.RedisResult {
	if l.c.opts.ReplicaAck <= 0 {
		return lua.Acquire.Exec(ctx, l.c.rc, keys, args)
	}
	var res, acks rueidis.RedisResult
	ackMs := max(l.c.opts.ReplicaAck.Milliseconds(), 1)
	err := l.c.rc.Dedicated(func(dc rueidis.DedicatedClient) error {
		// Commands are built for each send: rueidis recycles a command once sent.
		rs := dc.DoMulti(ctx,
			dc.B().Evalsha().Sha1(lua.Acquire.SHA1).Numkeys(1).Key(keys...).Arg(args...).Build(),
			dc.B().Wait().Numreplicas(1).Timeout(ackMs).Build())
		if e, ok := rueidis.IsRedisErr(rs[0].Error()); ok && e.IsNoScript() {
			rs = dc.DoMulti(ctx,
				dc.B().Eval().Script(lua.Acquire.Source).Numkeys(1).Key(keys...).Arg(args...).Build(),
				dc.B().Wait().Numreplicas(1).Timeout(ackMs).Build())
		}
		res, acks = rs[0], rs[1]
		return nil
	})
	if err != nil {
		return rueidis.NewErrorResult(err)
	}
	if !rueidis.IsRedisNil(res.Error()) {
		return res // not acquired, or failed
	}
	if n, err := acks.AsInt64(); err != nil || n < 1 {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), l.c.opts.ReleaseTimeout)
		l.release(rctx, args[1], watchdog)
		cancel()
		if err == nil {
			err = ErrNotReplicated
		}
		return rueidis.NewErrorResult(err)
	}
	return res
}
