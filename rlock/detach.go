package rlock

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// errNoReplyInTime is the error of an acquire whose reply did not come within
// ReleaseTimeout of its start while its caller, who has no deadline, still waited: the
// request may have run, as when a connection fails after sending it. It matches no context
// error: the caller did not end.
var errNoReplyInTime = errors.New("rlock: no reply from Redis within ReleaseTimeout")

// detached is the context of a request that must not be abandoned half way: a release, or
// an acquire whose caller may give up. It has the values of its parent, none of its
// cancellation, and a deadline of its own, rounded up to a grain that grows with how far
// away it is (at least 10 ms, under 4% of the time left; see roundUp), so that the
// contexts whose deadlines fall in one grain share one Done channel and one timer
// (sharedDone). A detached context costs one allocation, two when its parent can be
// canceled (context.WithoutCancel), and its Done none in the common case: rueidis asks for
// Done on every pipelined request.
type detached struct {
	parent   context.Context // the caller's, without its cancellation: values only
	deadline time.Time       // rounded up to its grain

	mu   sync.Mutex
	done <-chan struct{} // sharedDone's channel of deadline, once Done or Err asked for it
}

// detach returns a context with parent's values, without its cancellation, that ends d from
// now (a little later: see detached).
func detach(parent context.Context, d time.Duration) *detached {
	return detachAt(parent, time.Now().Add(d))
}

// detachAt returns a context with parent's values, without its cancellation, that ends at
// deadline rounded up to its grain, or in maxDetached if that is sooner.
func detachAt(parent context.Context, deadline time.Time) *detached {
	if latest := time.Now().Add(maxDetached); deadline.After(latest) {
		deadline = latest
	}
	if mayEnd(parent) { // else its values are all it has to give
		parent = context.WithoutCancel(parent)
	}
	return &detached{parent: parent, deadline: roundUp(deadline)}
}

// mayEnd reports whether ctx can end: it has a deadline or a Done channel. The deadline is
// asked first, since a context's Done may allocate its channel.
func mayEnd(ctx context.Context) bool {
	if _, ok := ctx.Deadline(); ok {
		return true
	}
	return ctx.Done() != nil
}

// maxDetached bounds how long a detached request may wait, whatever its caller's deadline
// (a day: far beyond any reply, and within the dates that Unix nanoseconds can hold).
const maxDetached = 24 * time.Hour

// detachAfter is detach for a request whose caller waits for it: the context ends d after
// the caller's deadline, or d from now when the caller has none, so that a caller with a
// deadline never sees its request cut short before the caller itself gives up.
func detachAfter(caller context.Context, d time.Duration) *detached {
	deadline := time.Now().Add(d)
	if dl, ok := caller.Deadline(); ok && dl.Add(d).After(deadline) {
		deadline = dl.Add(d)
	}
	return detachAt(caller, deadline)
}

func (c *detached) Deadline() (time.Time, bool) { return c.deadline, true }

func (c *detached) Done() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.done == nil {
		c.done = sharedDone.channel(c.deadline)
	}
	return c.done
}

// Err is DeadlineExceeded once Done's channel is closed, nil before.
func (c *detached) Err() error {
	select {
	case <-c.Done():
		return context.DeadlineExceeded
	default:
		return nil
	}
}

func (c *detached) Value(key any) any { return c.parent.Value(key) }

func (c *detached) String() string { return "rlock.detached" }

// The grain of a detached context's deadline: minGrain doubled until it is at least 1/50 of
// the time left, so that deadlines seconds away share a channel per 10 ms or so, and far ones
// (a caller's deadline an hour away) make few channels however many requests carry them.
const (
	minGrain     = 10 * time.Millisecond
	grainPerLeft = 50
)

// roundUp returns deadline rounded up to its grain.
func roundUp(deadline time.Time) time.Time {
	grain := minGrain
	for left := time.Until(deadline); grain < left/grainPerLeft; {
		grain *= 2
	}
	ns, g := deadline.UnixNano(), int64(grain)
	if r := ns % g; r != 0 {
		ns += g - r
	}
	return time.Unix(0, ns)
}

// sharedDone holds the open Done channels of detached contexts, one per deadline, each
// closed and removed by a timer at that deadline.
var sharedDone = doneTable{m: make(map[int64]chan struct{})}

type doneTable struct {
	recent [8]atomic.Pointer[doneEntry] // channels handed out lately, by a hash of their key

	mu sync.Mutex
	m  map[int64]chan struct{} // by deadline in Unix ns
}

// doneEntry is a deadline in Unix ns and its channel.
type doneEntry struct {
	key int64
	ch  chan struct{}
}

// channel returns the channel closed at deadline: closed already when it has passed.
// Contexts made close together share a deadline, so a channel handed out lately is usually
// the one asked for: it is returned without taking the table's lock (closed or not, it is
// the right one, since it closes at that deadline).
func (t *doneTable) channel(deadline time.Time) <-chan struct{} {
	key := deadline.UnixNano()
	slot := &t.recent[uint64(key)*0x9E3779B97F4A7C15>>61] // a Fibonacci hash: the top 3 bits
	if e := slot.Load(); e != nil && e.key == key {
		return e.ch
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	ch := t.m[key]
	if ch == nil {
		ch = make(chan struct{})
		if left := time.Until(deadline); left <= 0 {
			close(ch)
		} else {
			t.m[key] = ch
			time.AfterFunc(left, func() { t.close(key) })
		}
	}
	slot.Store(&doneEntry{key, ch})
	return ch
}

// close closes and removes the channel of the deadline key.
func (t *doneTable) close(key int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	close(t.m[key])
	delete(t.m, key)
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
	if !mayEnd(ctx) {
		return r.run(ctx)
	}
	rctx := detachAfter(ctx, c.opts.ReleaseTimeout)
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
			r.undo(bctx, v)
		}
		if !c.goBackground(giveBack) {
			giveBack()
		}
	}
	var zero T
	return zero, ctx.Err()
}
