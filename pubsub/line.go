package pubsub

import (
	"context"
	"errors"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/redis/rueidis"

	"github.com/goredisson/goredisson/internal/backoff"
)

const (
	// lineChannelsPerCommand bounds the channels of one SUBSCRIBE or UNSUBSCRIBE a line sends.
	lineChannelsPerCommand = 1000
	// lineBatch bounds the subscriptions a line changes in one round trip.
	lineBatch = 20 * lineChannelsPerCommand
	// followEvery is how often a line on a Sentinel client checks that its connection is
	// still to the master the client sends commands to.
	followEvery = 500 * time.Millisecond
)

// line keeps the subscriptions of one kind (classic or sharded) of a hub outside a cluster,
// on one connection of its own. One goroutine sends every change: the subscriptions that
// waiters opened or left while its previous round trip was on the wire go out together, as
// SUBSCRIBE and UNSUBSCRIBE commands of many channels each, whose results come back once
// the server has applied them all (see commands). Messages arrive through the connection's hooks.
// So a waiting channel costs a map entry, not a goroutine and a receive buffer, and
// subscribing many channels at once costs a few round trips, not one each.
//
// When the connection is lost, the line dials another and subscribes again every channel
// that has waiters; the waiters are woken on that confirmation (sub.confirmed).
//
// On a Sentinel client the line also follows failovers: a master that the sentinels
// replaced may keep its connections for a while (it is still up, or is reconfigured as a
// replica seconds later), and the new master's messages do not reach it. Every followEvery
// the line compares the nodes that the client sends commands to with those it was dialed
// to, and moves to a new connection when they differ.
type line struct {
	h       *hub
	sharded bool
	follow  bool          // the client is a Sentinel client: see moveIfMoved
	kick    chan struct{} // one slot: the queue has work
	resp2   bool          // the client speaks RESP2: batches end with barrierChannel; run's goroutine only

	// guarded by h.mu
	queue   []*sub // subscriptions whose state on the server is to change, in order
	running bool
	stop    context.CancelFunc // ends the goroutine
	exited  chan struct{}      // closed when the goroutine has returned
}

func newLine(h *hub, sharded bool) *line {
	follow := h.client.Mode() == rueidis.ClientModeSentinel
	return &line{h: h, sharded: sharded, follow: follow, kick: make(chan struct{}, 1)}
}

// queueLocked asks the line to bring b's state on the server in line with the hub's: b
// subscribed while it is live, unsubscribed once it is not. Called with h.mu held.
func (l *line) queueLocked(b *sub) {
	if !b.queued {
		b.queued = true
		l.queue = append(l.queue, b)
	}
	if !l.running {
		ctx, cancel := context.WithCancel(context.Background())
		l.running, l.stop, l.exited = true, cancel, make(chan struct{})
		go l.run(ctx, l.exited)
	}
	select {
	case l.kick <- struct{}{}:
	default:
	}
}

// stopLocked ends the line once its hub has no user: its connection is closed, which ends
// its subscriptions, and every subscription of its kind finishes. It returns a channel closed
// when the line has stopped. Called with h.mu held.
func (l *line) stopLocked() <-chan struct{} {
	if !l.running {
		done := make(chan struct{})
		close(done)
		return done
	}
	l.stop()
	return l.exited
}

// lineConn is one connection of a line.
type lineConn struct {
	dc    rueidis.DedicatedClient
	lost  <-chan error // receives or is closed when the connection is gone
	nodes string       // the client's nodes when it was dialed (see nodes)
}

// change is one subscription's change sent to the server.
type change struct {
	b         *sub
	subscribe bool // SUBSCRIBE; UNSUBSCRIBE otherwise
}

func (l *line) run(ctx context.Context, exited chan struct{}) {
	defer close(exited)
	var c *lineConn
	defer func() { l.end(c) }()
	// A round trip under way when the line stops is finished (bounded by unsubscribeTimeout),
	// so that the changes it carries, the last waiters' unsubscriptions among them, are applied.
	sendCtx, cancelSend := context.WithCancel(context.Background())
	defer cancelSend()
	defer context.AfterFunc(ctx, func() { time.AfterFunc(unsubscribeTimeout, cancelSend) })()
	retry := backoff.New(retryMin, retryMax)
	var follow <-chan time.Time
	if l.follow {
		tick := time.NewTicker(followEvery)
		defer tick.Stop()
		follow = tick.C
	}
	for {
		var lost <-chan error
		if c != nil {
			lost = c.lost
		}
		select {
		case <-lost:
			c = l.drop(c, nil, nil)
			continue
		case <-follow:
			c = l.moveIfMoved(c)
			continue
		default:
		}
		batch := l.take()
		if len(batch) == 0 {
			select {
			case <-l.kick:
			case <-ctx.Done():
				return
			case <-lost:
				c = l.drop(c, nil, nil)
			case <-follow:
				c = l.moveIfMoved(c)
			}
			continue
		}
		if c == nil {
			c = l.dial()
		}
		confirmed, err := l.send(sendCtx, c, batch, lineChannelsPerCommand)
		if err != nil {
			failed := c.nodes
			c = l.drop(c, batch, err)
			if !l.pause(ctx, retry, follow, failed) {
				return
			}
			continue
		}
		if confirmed {
			retry = backoff.New(retryMin, retryMax)
		}
	}
}

// drop closes c, which is lost (with err, while batch was being sent on it), and queues its
// subscriptions to be made again (lose). It returns nil.
func (l *line) drop(c *lineConn, batch []change, err error) *lineConn {
	c.dc.Close()
	l.lose(batch, err)
	return nil
}

// moveIfMoved closes c, queueing its subscriptions to be made again on a new connection,
// when the client now sends commands to other nodes than when c was dialed: after a
// failover, c may still be to the old master. It returns the connection to keep (nil
// when there is none).
func (l *line) moveIfMoved(c *lineConn) *lineConn {
	if c == nil || c.nodes == l.nodes() {
		return c
	}
	return l.drop(c, nil, nil)
}

// pause waits before the line dials again after a connection to failed (its nodes) failed:
// retry's next delay, cut short on a following line once the client sends commands to other
// nodes (a failover: the new master is there to dial). It reports false, early, when ctx
// ends.
func (l *line) pause(ctx context.Context, retry *backoff.Backoff, follow <-chan time.Time, failed string) bool {
	t := time.NewTimer(retry.Next())
	defer t.Stop()
	for {
		select {
		case <-t.C:
			return true
		case <-ctx.Done():
			return false
		case <-follow:
			if l.nodes() != failed {
				return true
			}
		}
	}
}

// dial returns a new connection whose messages reach the hub's waiters. The client's nodes
// are read before the connection is taken, so that a failover in between makes the next
// check move the line rather than hide the change.
func (l *line) dial() *lineConn {
	nodes := l.nodes()
	dc, _ := l.h.client.Dedicate()
	lost := dc.SetPubSubHooks(rueidis.PubSubHooks{
		OnMessage:      l.deliver,
		OnSubscription: func(rueidis.PubSubSubscription) {},
	})
	return &lineConn{dc: dc, lost: lost, nodes: nodes}
}

// nodes names the nodes that a following line's client sends commands to (its master, and
// the replica it reads from if it has one), "" for a line that does not follow.
func (l *line) nodes() string {
	if !l.follow {
		return ""
	}
	return strings.Join(slices.Sorted(maps.Keys(l.h.client.Nodes())), " ")
}

// deliver applies a message to the waiters of its channel. It runs on the connection's
// reader goroutine.
func (l *line) deliver(m rueidis.PubSubMessage) {
	l.h.mu.Lock()
	b := l.h.live[subKey{channel: m.Channel, sharded: l.sharded}]
	l.h.mu.Unlock()
	if b != nil {
		b.onMessage(m)
	}
}

// take returns the next changes to send, at most lineBatch. A subscription that left before
// it was sent finishes here, with nothing to send.
func (l *line) take() []change {
	h := l.h
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []change
	n := 0
	for ; n < len(l.queue) && len(out) < lineBatch; n++ {
		b := l.queue[n]
		b.queued = false
		live := h.live[b.key] == b
		switch {
		case b.finished:
		case live && !b.onServer:
			out = append(out, change{b: b, subscribe: true})
		case !live && b.onServer:
			out = append(out, change{b: b})
		case !live:
			b.finishLocked()
		}
	}
	l.queue = append(l.queue[:0], l.queue[n:]...)
	return out
}

// send applies batch on c in one round trip, with at most perCommand channels per command.
// It reports whether a subscription was confirmed, and returns an error when the connection
// failed; the server refusing a subscription is not an error of send: that subscription
// fails.
func (l *line) send(ctx context.Context, c *lineConn, batch []change, perCommand int) (confirmed bool, err error) {
	cmds, parts := l.commands(c.dc, batch, perCommand)
	res := c.dc.DoMulti(ctx, cmds...)
	if !l.resp2 && len(res) > 0 && errors.Is(res[0].Error(), rueidis.ErrRESP2PubSubMixed) {
		l.resp2 = true // refused before anything was sent
		cmds, parts = l.commands(c.dc, batch, perCommand)
		res = c.dc.DoMulti(ctx, cmds...)
	}
	var refused []change
	for i, part := range parts {
		rerr := res[i].Error()
		var re *rueidis.RedisError
		switch {
		case rerr == nil:
			l.applied(part)
			confirmed = confirmed || part[0].subscribe
		case !errors.As(rerr, &re):
			return confirmed, rerr
		case len(part) == 1 || !part[0].subscribe:
			l.refused(part, rerr)
		default:
			refused = append(refused, part...)
		}
	}
	if len(res) > len(parts) {
		if err := res[len(parts)].NonRedisError(); err != nil {
			return confirmed, err
		}
	}
	if len(refused) > 0 { // a SUBSCRIBE of many channels refused: find which, one each
		more, err := l.send(ctx, c, refused, 1)
		return confirmed || more, err
	}
	return confirmed, nil
}

// commands returns the commands that apply batch, in order, each with the changes it
// carries (runs of the same change, at most perCommand channels each), and a closing PING,
// whose reply means the server has applied them all; on RESP2, where a subscribed
// connection takes no PING among them, an UNSUBSCRIBE of barrierChannel when the last is a
// SUBSCRIBE.
func (l *line) commands(dc rueidis.DedicatedClient, batch []change, perCommand int) (rueidis.Commands, [][]change) {
	var cmds rueidis.Commands
	var parts [][]change
	for start := 0; start < len(batch); {
		end := start + 1
		for end < len(batch) && end-start < perCommand && batch[end].subscribe == batch[start].subscribe {
			end++
		}
		part := batch[start:end]
		channels := make([]string, len(part))
		for i, ch := range part {
			channels[i] = ch.b.key.channel
		}
		cmds = append(cmds, l.command(dc, part[0].subscribe, channels))
		parts = append(parts, part)
		start = end
	}
	switch {
	case !l.resp2:
		cmds = append(cmds, dc.B().Ping().Build())
	case batch[len(batch)-1].subscribe:
		cmds = append(cmds, l.command(dc, false, []string{barrierChannel}))
	}
	return cmds, parts
}

// barrierChannel is a channel nothing subscribes: on RESP2, unsubscribing it closes a batch
// that ends with a SUBSCRIBE. rueidis returns an UNSUBSCRIBE once the reply to a PING it
// sends after it has come, so the batch's results come back once every confirmation before
// it was read.
const barrierChannel = "goredisson:pubsub:barrier"

func (l *line) command(dc rueidis.DedicatedClient, subscribe bool, channels []string) rueidis.Completed {
	switch {
	case subscribe && l.sharded:
		return dc.B().Ssubscribe().Channel(channels...).Build()
	case subscribe:
		return dc.B().Subscribe().Channel(channels...).Build()
	case l.sharded:
		return dc.B().Sunsubscribe().Channel(channels...).Build()
	}
	return dc.B().Unsubscribe().Channel(channels...).Build()
}

// applied records changes the server has applied.
func (l *line) applied(part []change) {
	l.h.mu.Lock()
	defer l.h.mu.Unlock()
	for _, ch := range part {
		b := ch.b
		if ch.subscribe {
			b.onServer = true // one that left meanwhile is queued to unsubscribe
			b.confirmed()
			continue
		}
		b.onServer = false
		b.finishLocked()
	}
}

// refused fails the subscriptions of part, which the server refused with err.
func (l *line) refused(part []change, err error) {
	l.h.mu.Lock()
	defer l.h.mu.Unlock()
	for _, ch := range part {
		if ch.subscribe {
			ch.b.onServer = false
			ch.b.fail(err)
		} else {
			ch.b.finishLocked() // an UNSUBSCRIBE refused: the channel's messages are ignored
		}
	}
}

// lose records that the line's connection is gone, with the subscriptions on it: those of
// batch, whose changes were being sent when it failed with err, and the others. A
// subscription never confirmed fails with err (Subscribe returns it); every other live one
// is queued to be subscribed again, and an ending one finishes.
func (l *line) lose(batch []change, err error) {
	h := l.h
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, ch := range batch {
		switch b := ch.b; {
		case b.finished || !ch.subscribe:
		case b.confirmations() == 0:
			b.fail(err)
		default:
			l.queueLocked(b)
		}
	}
	for _, m := range []map[subKey]*sub{h.draining, h.live} {
		for key, b := range m {
			if key.sharded != l.sharded || !b.onServer {
				continue
			}
			b.onServer = false
			if h.live[key] == b {
				l.queueLocked(b)
			} else {
				b.finishLocked()
			}
		}
	}
}

// end unsubscribes and closes c, and finishes every subscription of the line's kind: the hub
// has no user.
func (l *line) end(c *lineConn) {
	h := l.h
	if c != nil {
		var changes []change
		h.mu.Lock()
		for _, m := range []map[subKey]*sub{h.live, h.draining} {
			for key, b := range m {
				if key.sharded == l.sharded && b.onServer {
					changes = append(changes, change{b: b})
				}
			}
		}
		h.mu.Unlock()
		if len(changes) > 0 {
			ctx, cancel := context.WithTimeout(context.Background(), unsubscribeTimeout)
			l.send(ctx, c, changes, lineChannelsPerCommand)
			cancel()
		}
		c.dc.Close()
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, m := range []map[subKey]*sub{h.live, h.draining} {
		for key, b := range m {
			if key.sharded == l.sharded {
				b.onServer = false
				b.finishLocked()
			}
		}
	}
	for _, b := range l.queue {
		b.queued = false
	}
	l.queue = nil
	l.running = false
}
