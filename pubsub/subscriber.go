package pubsub

import (
	"context"
	"slices"
	"sync"

	"github.com/redis/rueidis"
)

// Subscriber registers waiters on channels and wakes them by the rules they state. It is
// safe for concurrent use. The zero value is not usable: create one with New and end it
// with Close.
//
// Every Subscriber on one rueidis client shares that client's subscriptions: a channel has
// one SUBSCRIBE (or SSUBSCRIBE) per client, opened by the first waiter of any of them and
// closed by the last. Each Subscriber still applies the rules to its own waiters, as
// separate Redisson clients would: a message that wakes one waiter wakes one waiter of each
// Subscriber that has waiters on the channel.
type Subscriber struct {
	h      *hub
	listen Kinds

	mu        sync.Mutex
	byChannel map[groupKey]*group // channel and class → the group new waiters join
	groups    map[*group]struct{} // every group with waiters, including ones replaced in byChannel
	closed    bool
	closing   chan struct{} // closed when Close starts
	stopped   chan struct{} // closed when Close has finished
}

// New returns a Subscriber that subscribes through client with the kinds in listen: SUBSCRIBE
// for Classic, SSUBSCRIBE for Sharded, both (one subscription each, every message heard on
// either applied by the rule) for Classic|Sharded; no kind means Classic. Subscribers given the same client value share its
// subscriptions (a wrapper around a client is another client). The Subscriber never closes
// client; it must be closed before client is.
func New(client rueidis.Client, listen Kinds) *Subscriber {
	if listen &= Classic | Sharded; listen == 0 {
		listen = Classic
	}
	return &Subscriber{
		h:         openHub(client),
		listen:    listen,
		byChannel: make(map[groupKey]*group),
		groups:    make(map[*group]struct{}),
		closing:   make(chan struct{}),
		stopped:   make(chan struct{}),
	}
}

// Subscribe registers a waiter on channel whose wake-ups follow rule, and returns once the
// server has confirmed the channel's subscriptions (one per kind), so that no message published after
// Subscribe returns is missed. Waiters on one channel are served in the order of their
// Subscribe calls. The waiters of one channel must state the same rule (a channel belongs
// to one object); the rule of the channel's earliest waiter is the one applied.
//
// It returns ctx.Err() when ctx ends first, the subscription error when the first attempt to
// subscribe fails, or ErrClosed. On error nothing stays registered. On success the caller
// must Close the Waiter.
func (s *Subscriber) Subscribe(ctx context.Context, channel string, rule Rule) (*Waiter, error) {
	return s.SubscribeClass(ctx, channel, "", rule)
}

// SubscribeClass is Subscribe for a waiter of one class of the channel's waiters: each class
// is served apart, in the order of its own Subscribe calls and by the rule of its own
// earliest waiter, as the waiters of two Subscribers are, while the server-side
// subscription stays one for all. A channel shared by two kinds of waiter that a message
// concerns differently (a read-write lock's readers and writers) gives each kind its class
// and its rule. Subscribe is the class "".
func (s *Subscriber) SubscribeClass(ctx context.Context, channel, class string, rule Rule) (*Waiter, error) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil, ErrClosed
	}
	key := groupKey{channel: channel, class: class}
	g := s.byChannel[key]
	if g == nil || g.failed() {
		g = s.newGroup(key)
	}
	g.refs++
	w := &Waiter{g: g, rule: rule, wake: make(chan struct{}, 1)}
	g.add(w)
	s.mu.Unlock()

	for _, b := range g.subscriptions() {
		select {
		case <-b.readyChan():
			if b.err != nil {
				w.Close()
				return nil, b.err
			}
		case <-ctx.Done():
			w.Close()
			return nil, ctx.Err()
		case <-s.closing:
			w.Close()
			return nil, ErrClosed
		}
	}
	return w, nil
}

// Close ends the waits of this Subscriber's waiters with ErrClosed and makes later calls
// return ErrClosed. It ends the subscriptions that no other Subscriber on the same client
// uses and returns once they are gone; the last Subscriber on a client returns once every
// subscription of that client is gone. The subscriptions of other Subscribers are kept.
// Close is idempotent.
func (s *Subscriber) Close() {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		<-s.stopped
		return
	}
	s.closed = true
	close(s.closing)
	var ending []<-chan struct{}
	for g := range s.groups {
		g.stop(ErrClosed)
		ending = append(ending, g.detach()...)
	}
	clear(s.groups)
	clear(s.byChannel)
	s.mu.Unlock()
	ending = append(ending, s.h.closeHub()...)
	for _, done := range ending {
		<-done
	}
	close(s.stopped)
}

// groupKey names the group of one class of waiters on one channel.
type groupKey struct{ channel, class string }

// newGroup creates the group of key that new waiters join. Called with s.mu held.
func (s *Subscriber) newGroup(key groupKey) *group {
	channel := key.channel
	g := &group{s: s, key: key}
	n := 0
	for _, k := range []Kinds{Sharded, Classic} {
		if s.listen.Has(k) {
			g.subs[n] = s.h.join(subKey{channel: channel, sharded: k == Sharded}, g)
			n++
		}
	}
	s.byChannel[key] = g
	s.groups[g] = struct{}{}
	return g
}

// release drops one waiter of g; the last one detaches g from its subscriptions.
func (s *Subscriber) release(g *group) {
	s.mu.Lock()
	defer s.mu.Unlock()
	g.refs--
	if g.refs > 0 {
		return
	}
	if s.byChannel[g.key] == g {
		delete(s.byChannel, g.key)
	}
	delete(s.groups, g)
	g.detach()
}

// group is one Subscriber's waiters on one channel, attached to the subscriptions of that
// channel.
type group struct {
	s        *Subscriber
	key      groupKey
	subs     [2]*sub // set at creation: one per kind listened to, then nil
	refs     int32   // waiters registered; guarded by s.mu
	detached bool    // left its subscriptions; guarded by s.mu

	mu      sync.Mutex
	waiters []*Waiter // in arrival order
	stopped error     // set once: every wait of g ends with it
}

// stop ends the waits of g's waiters, now and later, with err (the first error given): the
// Subscriber closed, or a subscription of g was refused for good.
func (g *group) stop(err error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.stopped == nil {
		g.stopped = err
	}
	g.wakeLocked(WakeAll)
}

// detach leaves g's subscriptions and returns channels closed when those it ended are gone.
// Called with s.mu held.
func (g *group) detach() []<-chan struct{} {
	if g.detached {
		return nil
	}
	g.detached = true
	var ending []<-chan struct{}
	for _, b := range g.subscriptions() {
		if e := g.s.h.leave(b, g); e != nil {
			ending = append(ending, e)
		}
	}
	return ending
}

// failed reports whether a subscription of g failed for good. Called with s.mu held.
func (g *group) failed() bool {
	return slices.ContainsFunc(g.subscriptions(), g.s.h.failed)
}

// subscriptions returns g's subscriptions, one per kind it listens to.
func (g *group) subscriptions() []*sub {
	n := 0
	for n < len(g.subs) && g.subs[n] != nil {
		n++
	}
	return g.subs[:n]
}

func (g *group) add(w *Waiter) {
	g.mu.Lock()
	g.waiters = append(g.waiters, w)
	g.mu.Unlock()
}

// remove unregisters w and hands a wake-up w did not consume to the next waiter.
func (g *group) remove(w *Waiter) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if i := slices.Index(g.waiters, w); i >= 0 {
		g.waiters = slices.Delete(g.waiters, i, i+1)
	}
	select {
	case <-w.wake:
		g.wakeLocked(WakeN(1))
	default:
	}
}

// onMessage applies the rule of the earliest waiter to message.
func (g *group) onMessage(message string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if len(g.waiters) > 0 {
		g.wakeLocked(g.waiters[0].rule(message))
	}
}

func (g *group) wake(k Wake) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.wakeLocked(k)
}

// wakeLocked wakes the waiters k names: all of them, or the k.n earliest that have no
// wake-up pending. Called with g.mu held.
func (g *group) wakeLocked(k Wake) {
	n := k.n
	for _, w := range g.waiters {
		if !k.all && n == 0 {
			return
		}
		select {
		case w.wake <- struct{}{}:
			n--
		default:
		}
	}
}
