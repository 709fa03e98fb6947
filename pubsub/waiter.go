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

	closeOnce sync.Once
}

// Wait blocks until the waiter is woken by a message (as its rule says) or by a
// resubscription, or until ctx ends. It returns nil when woken, ctx.Err() when ctx ended,
// ErrClosed when the Subscriber was closed, and the server's error when subscribing again
// after a lost subscription was refused (NOPERM: the user's ACL no longer allows it). A
// wake-up that arrived before Wait was called is consumed at once.
func (w *Waiter) Wait(ctx context.Context) error {
	_, err := w.wait(ctx, nil)
	return err
}

// WaitAtMost is Wait bounded by d: it also returns nil once d has passed, and reports
// whether a wake-up (not d) ended the wait. Lock types bound each wait by the holder's
// remaining lease, since pub/sub may lose a message.
func (w *Waiter) WaitAtMost(ctx context.Context, d time.Duration) (woken bool, err error) {
	t := time.NewTimer(d)
	defer t.Stop()
	return w.wait(ctx, t.C)
}

func (w *Waiter) wait(ctx context.Context, timeout <-chan time.Time) (woken bool, err error) {
	select {
	case <-w.wake:
		return true, nil
	case <-timeout:
		return false, nil
	case <-ctx.Done():
		return false, ctx.Err()
	case <-w.g.s.closing:
		return false, ErrClosed
	case <-w.g.lost:
		return false, w.g.lostErr
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
