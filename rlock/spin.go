package rlock

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/goredisson/goredisson/internal/keys"
)

// Defaults of SpinBackoff, Redisson's ExponentialBackOff.
const (
	DefaultSpinInitial    = time.Millisecond
	DefaultSpinMax        = 128 * time.Millisecond
	DefaultSpinMultiplier = 2
)

// SpinBackoff is how the waiters of a spin lock pause between attempts, Redisson's
// ExponentialBackOff: the first pause is Initial; each next one is the last one times
// Multiplier, plus a random jitter of 0 to n-1 ms after the n-th pause; every pause, the first
// too, is at most Max. Zero
// fields take the defaults (1 ms, 128 ms, 2), so SpinBackoff{} is Redisson's default policy.
// Multiplier 1 gives nearly constant pauses (Redisson's ConstantBackOff has none of the
// jitter). Negative fields are refused with ErrInvalidOptions.
type SpinBackoff struct {
	Initial    time.Duration
	Max        time.Duration
	Multiplier int
}

// withDefaults returns b with zero fields set to the defaults, or ErrInvalidOptions.
func (b SpinBackoff) withDefaults() (SpinBackoff, error) {
	switch {
	case b.Initial < 0:
		return b, fmt.Errorf("%w: SpinBackoff.Initial %v is negative", ErrInvalidOptions, b.Initial)
	case b.Max < 0:
		return b, fmt.Errorf("%w: SpinBackoff.Max %v is negative", ErrInvalidOptions, b.Max)
	case b.Multiplier < 0:
		return b, fmt.Errorf("%w: SpinBackoff.Multiplier %d is negative", ErrInvalidOptions, b.Multiplier)
	}
	if b.Initial == 0 {
		b.Initial = DefaultSpinInitial
	}
	if b.Max == 0 {
		b.Max = DefaultSpinMax
	}
	if b.Multiplier == 0 {
		b.Multiplier = DefaultSpinMultiplier
	}
	return b, nil
}

// spinPauses yields the pauses of one acquire, as Redisson's ExponentialBackOffPolicy.
type spinPauses struct {
	b     SpinBackoff
	next  time.Duration
	fails int
}

func (b SpinBackoff) pauses() *spinPauses { return &spinPauses{b: b, next: b.Initial} }

// pause returns the next pause, never more than Max (the first one included), and never
// overflowing however large Multiplier is.
func (p *spinPauses) pause() time.Duration {
	d := min(p.next, p.b.Max)
	if d == p.b.Max {
		p.next = d
		return d
	}
	p.fails++
	jitter := time.Duration(rand.IntN(p.fails)) * time.Millisecond
	if p.next > p.b.Max/time.Duration(p.b.Multiplier) { // next*Multiplier > Max, and may overflow
		p.next = p.b.Max
	} else {
		p.next = min(p.b.Max, p.next*time.Duration(p.b.Multiplier)+jitter)
	}
	return d
}

// rideOutPause is lost's pause before a spin waiter's next try, bounded by the wait; false
// when ctx or the wait ended first.
func (c *Client) rideOutPause(ctx context.Context, wait waitBound, deadline time.Time, lost *lostConnection) bool {
	if wait.limited {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, deadline)
		defer cancel()
	}
	return lost.wait(ctx)
}

// NewSpinLock returns the handle of the spin lock called name, as Java's getSpinLock(name)
// or, with a backoff other than SpinBackoff{}, getSpinLock(name, backOff): the lock of
// NewLock, on the same hash, reentrant, with the same watchdog, Held contexts and errors,
// but without pub/sub. Its waiters never subscribe: they try again after each pause of
// backoff, and its Unlock and ForceUnlock publish nothing. TryLock gives up after the first
// attempt that ends past its wait; a waiting acquire returns ErrClosed at its next attempt
// after Close. Like NewLock it never fails: its calls return ErrInvalidOptions for a
// negative backoff field.
//
// Choose it over NewLock where pub/sub costs more than polling: many locks with short holds
// in a large cluster (every classic PUBLISH is broadcast to every node), a proxy or service
// that does not carry pub/sub, or a limit on connections (each waited-on channel holds a
// subscription). It costs one script call per pause while the lock is held (with the
// defaults about 15 in the first second, then one per Max: 8 a second), and a waiter learns
// of a release only at its next attempt, up to Max later; a waiter on NewLock is woken by the release and sends nothing
// while it waits. Java clients waiting on RLock (getLock) for the same name are not woken
// by its releases either: use one lock type per name on every side.
func (c *Client) NewSpinLock(name string, backoff SpinBackoff) *Lock {
	b, err := backoff.withDefaults()
	return &Lock{c: c, name: name, channel: keys.LockChannel(name), kind: spin, spin: &spinLock{backoff: b, invalid: err}}
}

// spinLock is what a spin lock's handle adds to a Lock.
type spinLock struct {
	backoff SpinBackoff
	invalid error // the backoff's error, returned by every call
}

// spinFor is the waiting core of the spin lock, Redisson's spin loop: try; while the lock
// is held, pause as b says and try again, until try acquires or fails, the wait bound has
// passed after a try (ErrLocked), ctx ends, or the Client closes (ErrClosed). It never
// subscribes. try must record an acquisition before it returns. Like waitFor, it returns
// the first try's error at once and rides out a lost connection after that
// (lostConnection).
func (c *Client) spinFor(ctx context.Context, wait waitBound, b SpinBackoff, try func() (attempt, error)) error {
	deadline := time.Now().Add(wait.d)
	var pauses *spinPauses
	var timer *time.Timer
	var lost lostConnection
	for {
		a, err := try()
		if pauses != nil && lost.rideOut(err) { // a waiter rides out a lost connection, as in waitFor
			if !c.rideOutPause(ctx, wait, deadline, &lost) {
				return waitError(ctx, err)
			}
			continue
		}
		if err != nil || a.acquired {
			return err
		}
		if pauses == nil {
			pauses = b.pauses()
		}
		d := pauses.pause()
		if wait.limited {
			left := time.Until(deadline)
			if left <= 0 {
				return ErrLocked
			}
			d = min(d, left)
		}
		if timer == nil {
			timer = time.NewTimer(d)
			defer timer.Stop()
		} else {
			timer.Reset(d)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-timer.C:
		}
		if c.closed.Load() {
			return ErrClosed
		}
	}
}
