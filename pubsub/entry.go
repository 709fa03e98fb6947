package pubsub

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/redis/rueidis"
)

// entry is one channel's subscription and the local waiters sharing it.
type entry struct {
	channel string
	ctx     context.Context
	cancel  context.CancelFunc
	ready   chan struct{} // closed on the first confirmation, or on failure (err set)
	done    chan struct{} // closed once the subscription is gone and its goroutine stopped
	err     error         // set before ready is closed when the first subscribe failed

	refs    int          // guarded by Subscriber.mu
	waiting atomic.Int32 // waiters blocked in Wait

	mu      sync.Mutex
	subs    int       // confirmations seen
	waiters []*Waiter // in arrival order
}

func (e *entry) add(w *Waiter) {
	e.mu.Lock()
	e.waiters = append(e.waiters, w)
	e.mu.Unlock()
}

// remove unregisters w and hands a wake-up w did not consume to the next waiter.
func (e *entry) remove(w *Waiter) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if i := slices.Index(e.waiters, w); i >= 0 {
		e.waiters = slices.Delete(e.waiters, i, i+1)
	}
	select {
	case <-w.wake:
		e.wakeOneLocked()
	default:
	}
}

func (e *entry) confirmed() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.subs > 0
}

func (e *entry) fail(err error) {
	if err == nil {
		err = context.Canceled
	}
	e.err = err
	close(e.ready)
}

// onSubscription runs on the connection's reader goroutine: it must not block.
func (e *entry) onSubscription(s rueidis.PubSubSubscription) {
	if s.Channel != e.channel || (s.Kind != "subscribe" && s.Kind != "ssubscribe") {
		return
	}
	e.mu.Lock()
	e.subs++
	first := e.subs == 1
	e.mu.Unlock()
	if first {
		close(e.ready)
		return
	}
	e.wakeAll() // resubscribed after a reconnect: a release may have been missed
}

func (e *entry) onMessage(m rueidis.PubSubMessage) {
	if m.Channel != e.channel {
		return
	}
	switch m.Message {
	case "0":
		e.mu.Lock()
		e.wakeOneLocked()
		e.mu.Unlock()
	case "1":
		e.wakeAll()
	}
}

// wakeOneLocked wakes the earliest waiter without a pending wake-up. Called with e.mu held.
func (e *entry) wakeOneLocked() {
	for _, w := range e.waiters {
		select {
		case w.wake <- struct{}{}:
			return
		default:
		}
	}
}

func (e *entry) wakeAll() {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, w := range e.waiters {
		select {
		case w.wake <- struct{}{}:
		default:
		}
	}
}
