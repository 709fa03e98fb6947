package rlock

import (
	"context"
	"errors"
	"time"

	"github.com/goredisson/goredisson/internal/backoff"
	"github.com/goredisson/goredisson/pubsub"
)

// waitBound is how long an acquire may wait for another owner's release.
type waitBound struct {
	limited bool
	d       time.Duration // when limited
}

var unbounded = waitBound{}

func bounded(d time.Duration) waitBound { return waitBound{limited: true, d: d} }

// attempt is the outcome of one try of an acquire script.
type attempt struct {
	acquired bool
	expires  bool          // not acquired: the holder's key has a TTL
	ttl      time.Duration // not acquired, expires: the holder's remaining lease
	token    int64         // acquired: the fencing token (fenced locks)
}

// waitFor is the waiting core of the lock types, Redisson's waiter loop: try once; when the
// lock is held, become a waiter on channel (woken as rule says), try again (a release
// between the first try and the subscription is not missed), then sleep until woken, or
// until the holder's remaining lease or the wait bound has passed, and try again. A holder
// key without a TTL is waited for by message only. It never polls. try must record an
// acquisition before it returns, and undo, as far as it can, what a request whose reply was
// lost may have done (Lock.forget).
//
// The first try's error is returned at once. Once a waiter, a try that fails on the
// connection is made again after a pause, while the tries keep failing for less than
// reconnectWait (lostConnection), so that a waiter rides out a reconnect, a restart or a
// failover.
//
// It returns nil once try acquired, ErrLocked when the wait bound passed, ctx.Err() when
// ctx ended, ErrClosed when the Client closed, or try's error.
func (c *Client) waitFor(ctx context.Context, wait waitBound, channel string, rule pubsub.Rule, try func() (attempt, error)) error {
	return c.waitForClass(ctx, wait, channel, "", rule, try)
}

// waitForClass is waitFor for a waiter of one class of the channel's waiters, each class
// woken by its own rule (pubsub.Subscriber.SubscribeClass): a read-write lock's readers and
// writers.
func (c *Client) waitForClass(ctx context.Context, wait waitBound, channel, class string, rule pubsub.Rule, try func() (attempt, error)) error {
	deadline := time.Now().Add(wait.d)
	a, err := try()
	if err != nil || a.acquired {
		return err
	}
	if wait.limited && wait.d == 0 {
		return ErrLocked
	}
	sctx := ctx
	if wait.limited {
		var cancel context.CancelFunc
		sctx, cancel = context.WithDeadline(ctx, deadline)
		defer cancel()
	}
	w, err := c.subscribe(sctx, channel, class, rule)
	if err != nil {
		return waitError(ctx, err)
	}
	defer w.Close()
	run := opFrom(ctx)
	var lost lostConnection
	for {
		a, err := try()
		if lost.rideOut(err) {
			if !lost.wait(sctx) {
				return waitError(ctx, err)
			}
			continue
		}
		if err != nil || a.acquired {
			return err
		}
		sleep, limited := a.ttl, a.expires
		if wait.limited {
			left := time.Until(deadline)
			if left <= 0 {
				return ErrLocked
			}
			if !limited || left < sleep {
				sleep, limited = left, true
			}
		}
		slept, woken := time.Now(), true
		if limited {
			woken, err = w.WaitAtMost(ctx, sleep)
		} else {
			err = w.Wait(ctx)
		}
		run.slept(time.Since(slept), woken && err == nil)
		if err != nil {
			return waitError(ctx, err)
		}
	}
}

// subscribe subscribes a waiter to channel, riding out connection errors as a waiter's
// tries do (lostConnection): in a cluster, a subscription asked for while its master fails
// over fails until the client has the new master.
func (c *Client) subscribe(ctx context.Context, channel, class string, rule pubsub.Rule) (*pubsub.Waiter, error) {
	var lost lostConnection
	for {
		w, err := c.subs.SubscribeClass(ctx, channel, class, rule)
		if err == nil || errors.Is(err, pubsub.ErrClosed) || !lost.rideOut(err) || !lost.wait(ctx) {
			return w, err
		}
	}
}

// Tries that fail on the connection, made by a waiter, are made again after a pause that
// grows from reconnectPauseMin to reconnectPauseMax, for as long as they keep failing for
// up to reconnectWait.
const (
	reconnectPauseMin = 10 * time.Millisecond
	reconnectPauseMax = time.Second
	reconnectWait     = 30 * time.Second
)

// lostConnection tracks a waiter's tries that failed on the connection. The zero value is
// ready to use.
type lostConnection struct {
	since time.Time // when the tries began to fail; zero while they succeed
	pause *backoff.Backoff
}

// rideOut reports whether a waiter's try that returned err is to be made again after
// l.wait: err is a connection error (connectionError), and the tries have been failing
// for less than reconnectWait. A reconnect, a restart or a failover wakes the waiters when
// their subscription is confirmed again, and their next try may still meet a connection or
// a node that is going away; the try has already undone what its lost request may have
// done (Lock.forget).
func (l *lostConnection) rideOut(err error) bool {
	if !connectionError(err) {
		l.since = time.Time{}
		return false
	}
	if l.since.IsZero() {
		l.since = time.Now()
		l.pause = backoff.New(reconnectPauseMin, reconnectPauseMax)
	}
	return time.Since(l.since) < reconnectWait
}

// wait sleeps for the pause before the next try, and reports false, early, when ctx ends
// first.
func (l *lostConnection) wait(ctx context.Context) bool { return l.pause.Wait(ctx) }

// waitError maps an error of the waiting phase to what an acquire returns.
func waitError(ctx context.Context, err error) error {
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
