package rlock

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// errNoReplyInTime is the error of an acquire whose reply did not come within
// ReleaseTimeout of its start while its caller, who has no deadline, still waited: the
// request may have run, as when a connection fails after sending it. It matches no context
// error: the caller did not end.
var errNoReplyInTime = errors.New("rlock: no reply from Redis within ReleaseTimeout")

// detached is the context of a request that must not be abandoned half way: a release, or
// an acquire whose caller may give up. It has the values of its parent, none of its
// cancellation, and a deadline of its own. It is
// context.WithTimeout(context.WithoutCancel(parent), d) in two allocations rather than
// four: it makes its channel and arms its timer only when Done is first called, which
// rueidis does not do on its synchronous path (there the deadline bounds the connection's
// read and write).
type detached struct {
	parent   context.Context // context.WithoutCancel of the caller's: values only
	deadline time.Time

	mu      sync.Mutex
	done    chan struct{} // made by the first Done
	timer   *time.Timer   // closes done at the deadline
	expired bool          // done is closed, or will be when made
}

// detach returns a context with parent's values, without its cancellation, that ends d from
// now. Call its stop when the request is over, to release its timer.
func detach(parent context.Context, d time.Duration) *detached {
	return &detached{parent: context.WithoutCancel(parent), deadline: time.Now().Add(d)}
}

// detachAfter is detach for a request whose caller waits for it: the context ends d after
// the caller's deadline, or d from now when the caller has none, so that a caller with a
// deadline never sees its request cut short before the caller itself gives up.
func detachAfter(caller context.Context, d time.Duration) *detached {
	c := detach(caller, d)
	if dl, ok := caller.Deadline(); ok && dl.Add(d).After(c.deadline) {
		c.deadline = dl.Add(d)
	}
	return c
}

func (c *detached) Deadline() (time.Time, bool) { return c.deadline, true }

func (c *detached) Done() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.done == nil {
		c.done = make(chan struct{})
		if left := time.Until(c.deadline); c.expired || left <= 0 {
			c.expired = true
			close(c.done)
		} else {
			c.timer = time.AfterFunc(left, c.expire)
		}
	}
	return c.done
}

func (c *detached) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.expired && time.Now().Before(c.deadline) {
		return nil
	}
	c.expireLocked()
	return context.DeadlineExceeded
}

func (c *detached) Value(key any) any { return c.parent.Value(key) }

func (c *detached) String() string { return "rlock.detached" }

// expire ends c at its deadline.
func (c *detached) expire() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.expireLocked()
}

func (c *detached) expireLocked() {
	if !c.expired {
		c.expired = true
		if c.done != nil {
			close(c.done)
		}
	}
}

// stop releases c's timer, if Done armed one.
func (c *detached) stop() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.timer != nil {
		c.timer.Stop()
	}
}

// acquireRequest is a request that may take something (a hold, permits), as
// detachedAcquire runs it: run sends it, took tells from its outcome whether it took
// something, and undo gives that back.
type acquireRequest[T any] interface {
	run(context.Context) (T, error)
	took(T, error) bool
	undo(context.Context, T)
}

// detachedAcquire runs r on the caller's goroutine. With a ctx that can end, r runs under
// detachAfter(ctx, ReleaseTimeout) instead, so that its reply is never lost to ctx ending
// (and a ctx with a deadline never sees it cut short first; one without, after
// ReleaseTimeout, gets errNoReplyInTime, a lost reply, not a context error); when
// ctx ended before the reply arrived, it returns ctx.Err(), and if r took something, r.undo
// gives it back in the background (at once when the Client is closed), bounded by
// ReleaseTimeout. R is a value type: nothing is allocated for r unless it is undone.
func detachedAcquire[T any, R acquireRequest[T]](c *Client, ctx context.Context, r R) (T, error) {
	if ctx.Done() == nil {
		return r.run(ctx)
	}
	rctx := detachAfter(ctx, c.opts.ReleaseTimeout)
	defer rctx.stop()
	v, err := r.run(rctx)
	if ctx.Err() == nil {
		if err != nil && (errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled)) {
			// rctx ended while the caller still waits: a reply lost, not the caller's end.
			err = fmt.Errorf("%w: %v", errNoReplyInTime, err)
		}
		return v, err
	}
	if r.took(v, err) {
		giveBack := func() {
			bctx := detach(ctx, c.opts.ReleaseTimeout)
			defer bctx.stop()
			r.undo(bctx, v)
		}
		if !c.goBackground(giveBack) {
			giveBack()
		}
	}
	var zero T
	return zero, ctx.Err()
}
