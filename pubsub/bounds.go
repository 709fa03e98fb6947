package pubsub

import (
	"sync"
	"time"
)

// bounds ends the bounded waits of every Waiter in the process. Waits whose bounds fall in
// one grain share one timer: a time.AfterFunc per wait would cost 145 B of heap for as long
// as it waits, and a process may have 100,000 waiters, each bounded by its holder's lease.
// A bound is met late by less than its grain (see grainOf), never early.
var bounds = boundTable{grains: make(map[int64]*boundGrain)}

type boundTable struct {
	mu     sync.Mutex
	grains map[int64]*boundGrain // by end, in Unix ns
}

// boundGrain is the waits that end together: a list through their Waiters' bound fields.
type boundGrain struct {
	end   int64
	first *Waiter
}

// waitBound is a Waiter's place in a grain; guarded by bounds.mu.
type waitBound struct {
	grain      *boundGrain // nil when in none
	wait       uint64      // the wait it bounds (Waiter.waits)
	prev, next *Waiter
}

// add bounds wait number n of w by d from now. w must be in no grain.
func (t *boundTable) add(w *Waiter, n uint64, d time.Duration) {
	d = min(d, farBound)
	end := roundUp(time.Now().UnixNano()+int64(d), int64(grainOf(d)))
	t.mu.Lock()
	defer t.mu.Unlock()
	g := t.grains[end]
	if g == nil {
		g = &boundGrain{end: end}
		t.grains[end] = g
		time.AfterFunc(time.Until(time.Unix(0, end)), func() { t.fire(g) })
	}
	w.bound = waitBound{grain: g, wait: n, next: g.first}
	if g.first != nil {
		g.first.bound.prev = w
	}
	g.first = w
}

// remove takes w out of its grain, if it is in one.
func (t *boundTable) remove(w *Waiter) {
	t.mu.Lock()
	defer t.mu.Unlock()
	b := w.bound
	if b.grain == nil {
		return
	}
	if b.prev != nil {
		b.prev.bound.next = b.next
	} else {
		b.grain.first = b.next
	}
	if b.next != nil {
		b.next.bound.prev = b.prev
	}
	w.bound = waitBound{}
}

// fire ends the waits of g, whose end has come.
func (t *boundTable) fire(g *boundGrain) {
	type due struct {
		w *Waiter
		n uint64
	}
	var ending []due
	t.mu.Lock()
	delete(t.grains, g.end)
	for w := g.first; w != nil; {
		next := w.bound.next
		ending = append(ending, due{w, w.bound.wait})
		w.bound = waitBound{}
		w = next
	}
	g.first = nil
	t.mu.Unlock()
	for _, e := range ending {
		e.w.expire(e.n)
	}
}

// grainOf returns the grain of a bound d away: 100 µs doubled until it is at least a 512th
// of d, at most 12.8 ms, so that a lease's bound of seconds is met within 12.8 ms, a short one
// within 100 µs, and the ends of every grain are ends of the smaller ones: the waits of a
// second share a few hundred timers at most.
func grainOf(d time.Duration) time.Duration {
	g := minGrain
	for g < maxGrain && g < d/512 {
		g *= 2
	}
	return g
}

const (
	minGrain = 100 * time.Microsecond
	maxGrain = 128 * minGrain

	// farBound is the longest bound kept as given: a longer one ends no sooner than it
	// within any process's life, and its end stays within Unix nanoseconds.
	farBound = 100 * 365 * 24 * time.Hour
)

// roundUp returns ns rounded up to a multiple of grain.
func roundUp(ns, grain int64) int64 {
	if r := ns % grain; r != 0 {
		ns += grain - r
	}
	return ns
}
