package pubsub

import (
	"context"
	"sync"
	"time"
)

// Waiter is one local waiter's place on a shared subscription. Its methods are meant for
// the one goroutine that waits; Close may be called from any goroutine.
type Waiter struct {
	g    *group
	rule Rule
	wake chan struct{} // one slot: wake-ups that arrive while one is pending merge

	bound waitBound // guarded by bounds.mu

	// guarded by g.mu
	waits   uint64 // waits begun; a bound acts only within its own wait
	expired bool   // the current wait's bound has passed

	closeOnce sync.Once
}

// Wait blocks until the waiter is woken by a message (as its rule says) or by a
// resubscription, or until ctx ends. It returns nil when woken, ctx.Err() when ctx ended,
// ErrClosed when the Subscriber was closed, and the server's error when subscribing again
// after a lost subscription was refused (NOPERM: the user's ACL no longer allows it). A
// wake-up that arrived before Wait was called is consumed at once.
func (w *Waiter) Wait(ctx context.Context) error {
	_, err := w.wait(ctx, -1)
	return err
}

// WaitAtMost is Wait bounded by d: it also returns nil once d has passed, and reports
// whether a wake-up (not d) ended the wait. Lock types bound each wait by the holder's
// remaining lease, since pub/sub may lose a message.
func (w *Waiter) WaitAtMost(ctx context.Context, d time.Duration) (woken bool, err error) {
	return w.wait(ctx, max(d, 0))
}

// wait waits for a wake-up, bounded by d unless d < 0. The bound (see bounds) has no channel
// of its own: it wakes the waiter through wake, marking the wait expired, so that a waiter
// blocks on two channels at most.
func (w *Waiter) wait(ctx context.Context, d time.Duration) (woken bool, err error) {
	g := w.g
	g.mu.Lock()
	stopped := g.stopped
	w.waits++
	this := w.waits
	w.expired = false
	g.mu.Unlock()
	if stopped != nil {
		return false, stopped
	}
	if d >= 0 {
		bounds.add(w, this, d)
		defer bounds.remove(w)
	}
	select {
	case <-w.wake:
	case <-ctx.Done():
		return false, ctx.Err()
	}
	g.mu.Lock()
	stopped, expired := g.stopped, w.waits == this && w.expired
	w.waits++ // a timer that has not acted yet no longer will
	g.mu.Unlock()
	if stopped != nil {
		return false, stopped
	}
	return !expired, nil
}

// expire ends wait number n, when it is still the current one, as its bound passed.
func (w *Waiter) expire(n uint64) {
	w.g.mu.Lock()
	defer w.g.mu.Unlock()
	if w.waits != n {
		return
	}
	w.expired = true
	select {
	case w.wake <- struct{}{}:
	default: // a wake-up is pending: it ends the wait
	}
}

// Close removes the waiter. A wake-up it received but did not consume passes to the next
// waiter of its Subscriber on the channel, and the last waiter of a channel on the client
// ends the channel's subscription. Close is idempotent and does not block on Redis.
func (w *Waiter) Close() {
	w.closeOnce.Do(func() {
		w.g.remove(w)
		w.g.s.release(w.g)
	})
}
