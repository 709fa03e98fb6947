package pubsub

import (
	"context"
	"sync"
	"time"
)

// settleGate ends a subscription's Receive context only between connection attempts.
//
// rueidis dials a client's connection with the context of the call that finds it missing,
// and every call that arrives meanwhile (the script calls of every lock of the client) gets
// that dial's outcome; and rueidis's Receive tries again by itself, dialing again, when its
// connection is lost. Cancelled half way by a waiter leaving, such a dial would fail those
// calls with "operation was canceled". So the Receive context ends when the subscription's
// own context has ended and the subscription is settled: confirmed on a connection, and
// not lost since. When it does not settle within settleWait of the end (the server stays
// unreachable), it ends anyway, so that the subscription does not outlive its waiters.
type settleGate struct {
	mu      sync.Mutex
	settled chan struct{} // closed while the subscription is confirmed on a live connection
	cancel  context.CancelFunc
}

// settleWait bounds how long after its end a subscription waits to settle.
const settleWait = unsubscribeTimeout

// newSettleGate returns a context with parent's values that ends as the gate says once
// parent ends, and the gate; stop releases what watches parent.
func newSettleGate(parent context.Context) (ctx context.Context, g *settleGate, stop func()) {
	ctx, cancel := context.WithCancel(context.WithoutCancel(parent))
	g = &settleGate{settled: make(chan struct{}), cancel: cancel}
	unwatch := context.AfterFunc(parent, g.endWhenSettled)
	return ctx, g, func() {
		unwatch()
		cancel()
	}
}

// confirmed records a confirmation of the subscription.
func (g *settleGate) confirmed() {
	g.mu.Lock()
	defer g.mu.Unlock()
	select {
	case <-g.settled:
	default:
		close(g.settled)
	}
}

// lost records that an attempt of Receive ended; rueidis may dial again for the next one.
func (g *settleGate) lost() {
	g.mu.Lock()
	defer g.mu.Unlock()
	select {
	case <-g.settled:
		g.settled = make(chan struct{})
	default:
	}
}

// endWhenSettled ends the Receive context once the subscription is settled, or settleWait
// after it was called.
func (g *settleGate) endWhenSettled() {
	t := time.NewTimer(settleWait)
	defer t.Stop()
	for {
		g.mu.Lock()
		ch := g.settled
		g.mu.Unlock()
		select {
		case <-ch:
		case <-t.C:
			g.cancel()
			return
		}
		g.mu.Lock()
		if g.settled == ch { // still settled: no attempt ended since
			g.cancel()
			g.mu.Unlock()
			return
		}
		g.mu.Unlock()
	}
}
