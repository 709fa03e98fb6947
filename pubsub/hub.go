package pubsub

import (
	"context"
	"errors"
	"reflect"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/redis/rueidis"

	"github.com/goredisson/goredisson/internal/backoff"
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

// hub holds the server-side subscriptions made through one rueidis client. rueidis shares
// one connection per node among all Receive calls of a client, and an UNSUBSCRIBE on it
// ends every Receive of that channel; so each channel (of each kind) has one subscription
// per client, shared by the waiters of every Subscriber on that client.
type hub struct {
	client rueidis.Client
	shared bool // registered in hubs

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
		return &hub{client: client, users: 1, live: make(map[subKey]*sub), draining: make(map[subKey]*sub)}
	}
	hubs.Lock()
	defer hubs.Unlock()
	h := hubs.m[client]
	if h == nil {
		h = &hub{client: client, shared: true, live: make(map[subKey]*sub), draining: make(map[subKey]*sub)}
		hubs.m[client] = h
	}
	h.mu.Lock()
	h.users++
	h.mu.Unlock()
	return h
}

// closeHub drops one user of h. It returns the subscriptions still ending when the last
// user leaves (the caller waits for them), and nil otherwise.
func (h *hub) closeHub() []*sub {
	hubs.Lock()
	defer hubs.Unlock()
	h.mu.Lock()
	defer h.mu.Unlock()
	h.users--
	if h.users > 0 {
		return nil
	}
	h.unregisterIfIdleLocked()
	var ending []*sub
	for _, b := range h.live {
		ending = append(ending, b)
	}
	for _, b := range h.draining {
		ending = append(ending, b)
	}
	return ending
}

// unregisterIfIdleLocked removes h from hubs once nothing uses it. Called with hubs and h.mu
// held. A hub stays registered while a subscription of it still ends, so that a new
// Subscriber on the same client waits for that UNSUBSCRIBE before subscribing again.
func (h *hub) unregisterIfIdleLocked() {
	if h.shared && h.users == 0 && len(h.live) == 0 && len(h.draining) == 0 && hubs.m[h.client] == h {
		delete(hubs.m, h.client)
	}
}

// join attaches g to the live subscription of key, starting one when there is none.
func (h *hub) join(key subKey, g *group) *sub {
	h.mu.Lock()
	defer h.mu.Unlock()
	b := h.live[key]
	if b == nil {
		ctx, cancel := context.WithCancel(context.Background())
		b = &sub{h: h, key: key, ctx: ctx, cancel: cancel, ready: make(chan struct{}), done: make(chan struct{})}
		prev := h.draining[key]
		h.live[key] = b
		go b.run(prev)
	}
	b.refs++
	b.mu.Lock()
	b.groups = append(b.groups, g)
	b.mu.Unlock()
	return b
}

// leave detaches g from b. When g was b's last group, b is ended and returned, so that the
// caller may wait for it; otherwise leave returns nil.
func (h *hub) leave(b *sub, g *group) *sub {
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
	b.cancel()
	return b
}

// failed reports whether b stopped without waiters having left it: its first subscription
// failed.
func (h *hub) failed(b *sub) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return b.finished
}

// sub is one server-side subscription (SUBSCRIBE or SSUBSCRIBE of one channel) and the
// goroutine that keeps it, shared by the groups of every Subscriber of its hub.
type sub struct {
	h      *hub
	key    subKey
	ctx    context.Context // ends when the last group leaves
	cancel context.CancelFunc
	ready  chan struct{} // closed on the first confirmation, or on failure (err set)
	done   chan struct{} // closed once the subscription is gone and its goroutine stopped
	err    error         // set before ready is closed when the first subscribe failed

	refs     int  // groups attached; guarded by h.mu
	finished bool // the goroutine has stopped; guarded by h.mu

	mu       sync.Mutex
	confirms int      // confirmations seen
	groups   []*group // one per Subscriber with waiters on the channel
}

// run keeps b subscribed until b.ctx ends. It starts only after prev, the previous
// subscription of the same channel and kind, has been unsubscribed, so that the previous
// UNSUBSCRIBE can never remove this one; and it returns only after prev, so that the
// subscriptions of one channel end in order.
func (b *sub) run(prev *sub) {
	defer b.finish()
	if prev != nil {
		<-prev.done // bounded by prev's unsubscribeTimeout
		if b.ctx.Err() != nil {
			return
		}
	}
	retry := backoff.New(retryMin, retryMax)
	for {
		before := b.confirmations()
		err := b.receive()
		if b.ctx.Err() != nil {
			return
		}
		after := b.confirmations()
		if after == 0 {
			b.err = err
			close(b.ready)
			return
		}
		if refused(err) {
			// Subscribing again was refused (the user's ACL changed): the waiters get the
			// refusal, and later waiters subscribe afresh.
			b.lose(err)
			return
		}
		// The subscription ended while waiters remain: the connection was lost or the
		// server dropped the channel (slot migration). Messages may have been missed, but the
		// waiters are woken only once the subscription is confirmed again (onSubscription):
		// woken now, they would try on a connection or a node that is going away and return
		// its error, or miss a refusal of the new subscription. Until then a waiter's own
		// bound (the holder's remaining lease) still wakes it.
		if after > before {
			retry = backoff.New(retryMin, retryMax)
		}
		if !retry.Wait(b.ctx) {
			return
		}
	}
}

// finish unregisters b once its goroutine is done.
func (b *sub) finish() {
	h := b.h
	hubs.Lock()
	h.mu.Lock()
	if h.live[b.key] == b {
		delete(h.live, b.key)
	}
	if h.draining[b.key] == b {
		delete(h.draining, b.key)
	}
	b.finished = true
	h.unregisterIfIdleLocked()
	h.mu.Unlock()
	hubs.Unlock()
	close(b.done)
}

// receive runs one subscription until it ends, and unsubscribes on the same connection when
// it ends because b.ctx was cancelled. Its Receive context ends after b.ctx, once the
// subscription is settled (settleGate), so that no dial is cancelled half way.
func (b *sub) receive() error {
	c := b.h.client
	cmd := c.B().Subscribe().Channel(b.key.channel).Build()
	if b.key.sharded {
		cmd = c.B().Ssubscribe().Channel(b.key.channel).Build()
	}
	rctx, gate, stop := newSettleGate(b.ctx)
	defer stop()
	ctx := rueidis.WithOnSubscriptionHook(rctx, func(s rueidis.PubSubSubscription) {
		if s.Channel == b.key.channel && (s.Kind == "subscribe" || s.Kind == "ssubscribe") {
			gate.confirmed()
		}
		b.onSubscription(s)
	})
	ctx = rueidis.WithOnReceiveReturnHook(ctx, func(err error, cc rueidis.CommandClient) error {
		gate.lost() // rueidis may try again, on a connection it dials
		if b.ctx.Err() == nil {
			return err
		}
		uctx, cancel := context.WithTimeout(context.Background(), unsubscribeTimeout)
		defer cancel()
		unsub := cc.B().Unsubscribe().Channel(b.key.channel).Build()
		if b.key.sharded {
			unsub = cc.B().Sunsubscribe().Channel(b.key.channel).Build()
		}
		cc.Do(uctx, unsub)
		return err
	})
	return c.Receive(ctx, cmd, b.onMessage)
}

func (b *sub) confirmations() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.confirms
}

// onSubscription runs on the connection's reader goroutine: it must not block.
func (b *sub) onSubscription(s rueidis.PubSubSubscription) {
	if s.Channel != b.key.channel || (s.Kind != "subscribe" && s.Kind != "ssubscribe") {
		return
	}
	b.mu.Lock()
	b.confirms++
	first := b.confirms == 1
	b.mu.Unlock()
	if first {
		close(b.ready)
		return
	}
	b.wakeAll() // resubscribed after a reconnect: a release may have been missed
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
		g.lose(err)
	}
}

// refused reports whether err is the server refusing the subscription to the user (NOPERM:
// the command or the channel is not granted).
func refused(err error) bool {
	var re *rueidis.RedisError
	return errors.As(err, &re) && strings.HasPrefix(re.Error(), "NOPERM")
}

func (b *sub) wakeAll() {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, g := range b.groups {
		g.wake(WakeAll)
	}
}
