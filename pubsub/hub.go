package pubsub

import (
	"reflect"
	"slices"
	"sync"
	"time"

	"github.com/redis/rueidis"
)

const (
	// unsubscribeTimeout bounds the UNSUBSCRIBE sent when the last waiter of a channel leaves.
	unsubscribeTimeout = 5 * time.Second
	// retryMin and retryMax bound the delay before subscribing again after a subscription
	// was lost. The delay doubles after each attempt that the server did not confirm and
	// starts again from retryMin after one it confirmed.
	retryMin = 50 * time.Millisecond
	retryMax = 2 * time.Second
)

// hubs holds the hub of every rueidis client that has open Subscribers. Lock order: hubs,
// then a hub's mu.
var hubs = struct {
	sync.Mutex
	m map[rueidis.Client]*hub
}{m: make(map[rueidis.Client]*hub)}

// hub holds the server-side subscriptions made through one rueidis client: each channel (of
// each kind) has one subscription per client, shared by the waiters of every Subscriber on
// that client, and kept by the hub's line of its kind.
type hub struct {
	client rueidis.Client
	shared bool     // registered in hubs
	lines  [2]*line // classic and sharded subscriptions

	mu       sync.Mutex
	users    int             // open Subscribers
	live     map[subKey]*sub // subscriptions that waiters use
	draining map[subKey]*sub // subscriptions ending, each until its UNSUBSCRIBE is answered
}

// subKey names one server-side subscription.
type subKey struct {
	channel string
	sharded bool // SSUBSCRIBE rather than SUBSCRIBE
}

// openHub returns the hub of client with one more user. A client value that cannot be a map
// key gets a hub of its own.
func openHub(client rueidis.Client) *hub {
	if !reflect.ValueOf(client).Comparable() {
		h := newHub(client, false)
		h.users = 1
		return h
	}
	hubs.Lock()
	defer hubs.Unlock()
	h := hubs.m[client]
	if h == nil {
		h = newHub(client, true)
		hubs.m[client] = h
	}
	h.mu.Lock()
	h.users++
	h.mu.Unlock()
	return h
}

// newHub returns a hub of client with no user.
func newHub(client rueidis.Client, shared bool) *hub {
	h := &hub{client: client, shared: shared, live: make(map[subKey]*sub), draining: make(map[subKey]*sub)}
	h.lines = [2]*line{newLine(h, false), newLine(h, true)}
	return h
}

// closeHub drops one user of h. When the last user leaves, it returns what the caller is to
// wait for: the end of every subscription still open or ending, and of h's lines.
func (h *hub) closeHub() []<-chan struct{} {
	hubs.Lock()
	defer hubs.Unlock()
	h.mu.Lock()
	defer h.mu.Unlock()
	h.users--
	if h.users > 0 {
		return nil
	}
	h.unregisterIfIdleLocked()
	var ending []<-chan struct{}
	for _, b := range h.live {
		ending = append(ending, b.doneLocked())
	}
	for _, b := range h.draining {
		ending = append(ending, b.doneLocked())
	}
	for _, l := range h.lines {
		ending = append(ending, l.stopLocked())
	}
	return ending
}

// unregisterIfIdleLocked removes h from hubs once nothing uses it. Called with hubs and h.mu
// held. The hub leaves with its last user; its lines end its subscriptions on connections
// of their own.
func (h *hub) unregisterIfIdleLocked() {
	if h.shared && h.users == 0 && hubs.m[h.client] == h {
		delete(hubs.m, h.client)
	}
}

// join attaches g to the live subscription of key, starting one when there is none.
func (h *hub) join(key subKey, g *group) *sub {
	h.mu.Lock()
	defer h.mu.Unlock()
	b := h.live[key]
	if b == nil {
		b = &sub{h: h, key: key, ready: make(chan struct{})}
		h.live[key] = b
		h.lineOf(key).queueLocked(b)
	}
	b.refs++
	b.mu.Lock()
	b.groups = append(b.groups, g)
	b.mu.Unlock()
	return b
}

// leave detaches g from b. When g was b's last group, b is ended, and leave returns a channel
// closed once it is gone, so that the caller may wait for it; otherwise it returns nil.
func (h *hub) leave(b *sub, g *group) <-chan struct{} {
	b.mu.Lock()
	if i := slices.Index(b.groups, g); i >= 0 {
		b.groups = slices.Delete(b.groups, i, i+1)
	}
	b.mu.Unlock()
	h.mu.Lock()
	defer h.mu.Unlock()
	b.refs--
	if b.refs > 0 || b.finished {
		return nil
	}
	if h.live[b.key] == b {
		delete(h.live, b.key)
	}
	h.draining[b.key] = b
	h.lineOf(b.key).queueLocked(b)
	return b.doneLocked()
}

// lineOf returns the line that keeps subscriptions of key.
func (h *hub) lineOf(key subKey) *line {
	if key.sharded {
		return h.lines[1]
	}
	return h.lines[0]
}

// failed reports whether b stopped without waiters having left it: its first subscription
// failed.
func (h *hub) failed(b *sub) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return b.finished
}

// sub is one server-side subscription (SUBSCRIBE or SSUBSCRIBE of one channel), shared by
// the groups of every Subscriber of its hub, and kept by its hub's line of its kind.
type sub struct {
	h     *hub
	key   subKey
	ready chan struct{} // closed on the first confirmation, or on failure (err set), then closedReady; guarded by h.mu
	err   error         // set before ready is closed when the first subscribe failed

	done chan struct{} // made on demand (doneLocked); guarded by h.mu

	node     string // the node of the connection it is subscribed on (lineConn.addr); guarded by h.mu
	refs     int32  // groups attached; guarded by h.mu
	finished bool   // gone from the server, and from its line or goroutine; guarded by h.mu
	queued   bool   // in its line's queue; guarded by h.mu
	onServer bool   // subscribed on a connection of its line; guarded by h.mu

	mu       sync.Mutex
	confirms int32    // confirmations seen
	groups   []*group // one per Subscriber with waiters on the channel
}

// finishLocked unregisters b, which is gone from the server. Called with h.mu held.
func (b *sub) finishLocked() {
	h := b.h
	if h.live[b.key] == b {
		delete(h.live, b.key)
	}
	if h.draining[b.key] == b {
		delete(h.draining, b.key)
	}
	b.finished = true
	if b.done != nil {
		close(b.done)
	}
}

// doneLocked returns a channel closed once b is gone from the server and unregistered.
// Called with h.mu held.
func (b *sub) doneLocked() <-chan struct{} {
	if b.done == nil {
		b.done = make(chan struct{})
		if b.finished {
			close(b.done)
		}
	}
	return b.done
}

// fail ends b, whose subscription the server refused or never confirmed, with err: on its
// first subscription Subscribe returns err; later, the waits of its groups end with err.
// Called with h.mu held.
func (b *sub) fail(err error) {
	if b.confirmations() == 0 {
		b.err = err
		b.readyLocked()
	} else {
		b.lose(err)
	}
	b.finishLocked()
}

func (b *sub) confirmations() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return int(b.confirms)
}

// confirmed records a confirmation of b by the server. After the first, every waiter is
// woken: b was subscribed again after a loss, and a release may have been missed. Called
// with h.mu held.
func (b *sub) confirmed() {
	b.mu.Lock()
	b.confirms++
	first := b.confirms == 1
	b.mu.Unlock()
	if first {
		b.readyLocked()
		return
	}
	b.wakeAll()
}

// closedReady is the ready channel of every subscription past its first outcome: the
// channel a subscription made for that outcome is freed once closed, so that a waiting
// channel keeps none (96 B of heap per subscription).
var closedReady = func() chan struct{} {
	c := make(chan struct{})
	close(c)
	return c
}()

// readyLocked closes b's ready channel: its first subscription has an outcome. Called with
// h.mu held.
func (b *sub) readyLocked() {
	close(b.ready)
	b.ready = closedReady
}

// readyChan returns b's ready channel (see sub.ready).
func (b *sub) readyChan() <-chan struct{} {
	b.h.mu.Lock()
	defer b.h.mu.Unlock()
	return b.ready
}

func (b *sub) onMessage(m rueidis.PubSubMessage) {
	if m.Channel != b.key.channel {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, g := range b.groups {
		g.onMessage(m.Message)
	}
}

// lose ends the waits of every group of b with err.
func (b *sub) lose(err error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, g := range b.groups {
		g.stop(err)
	}
}

func (b *sub) wakeAll() {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, g := range b.groups {
		g.wake(WakeAll)
	}
}
