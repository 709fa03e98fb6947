package pubsub

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/redis/rueidis"

	"github.com/goredisson/goredisson/internal/backoff"
	"github.com/goredisson/goredisson/internal/connname"
	"github.com/goredisson/goredisson/internal/keys"
)

const (
	// lineChannelsPerCommand bounds the channels of one SUBSCRIBE or UNSUBSCRIBE a line sends.
	lineChannelsPerCommand = 1000
	// lineBatch bounds the subscriptions a line changes in one round trip.
	lineBatch = 20 * lineChannelsPerCommand
	// followEvery is how often a line on a Sentinel client checks that its connection is
	// still to the master the client sends commands to, and a cluster's sharded line that its
	// nodes are still in the client's view of the cluster.
	followEvery = 500 * time.Millisecond
)

// line keeps the subscriptions of one kind (classic or sharded) of a hub on connections of
// its own: one connection, or, for the sharded subscriptions of a Redis Cluster, one per
// master, each channel on the master of its slot (slotTable). One goroutine sends every
// change (a routing line's round trip to each master from a goroutine of its own, so that a
// node that hangs holds up no other: see dispatch): the subscriptions that waiters opened
// or left while its previous round trip was on the wire go out together, as SUBSCRIBE and
// UNSUBSCRIBE commands of many channels each, whose results come back once the server has
// applied them all (see commands). Messages arrive through the connections' hooks. So a
// waiting channel costs a map entry, not a goroutine and a receive buffer, and subscribing
// many channels at once costs a few round trips, not one each.
//
// When a connection is lost, the line dials another and subscribes again every channel that
// had been subscribed on it; the waiters are woken on that confirmation (sub.confirmed). In
// a cluster, a sharded subscription also moves when its node ends it (its slot moved to
// another master, or the master became a replica) or answers MOVED; a node that fails is
// tried again after pauses of its own, while the other masters' changes go on.
//
// On a Sentinel client the line also follows failovers: a master that the sentinels
// replaced may keep its connections for a while (it is still up, or is reconfigured as a
// replica seconds later), and the new master's messages do not reach it. Every followEvery
// the line compares the nodes that the client sends commands to with those it was dialed
// to, and moves to a new connection when they differ. A cluster's sharded line likewise
// leaves the connections to nodes the client no longer lists: a master that hangs closes
// nothing, and once the client's view of the cluster has dropped it (a replica took its
// slots), its channels are subscribed on their new master without waiting for rueidis to
// give the connection up.
type line struct {
	h       *hub
	sharded bool
	route   bool          // a cluster's sharded line: one connection per master (slotTable)
	follow  bool          // the client is a Sentinel client: see moveIfMoved
	kick    chan struct{} // one slot: the queue has work
	lost    chan *lineConn
	results chan nodeResult // a routing line's round trips to its nodes, as they end
	resp2   atomic.Bool     // the client speaks RESP2: batches end with a barrier

	// run's goroutine only
	conns  map[string]*lineConn // by node address; "" for a line that does not route
	slots  *slotTable
	down   map[string]*nodePause // a routing line's nodes that failed, each paused on its own
	parked []*sub                // subscriptions routed to a paused node, queued again at its end
	busy   map[string][]*sub     // a routing line's nodes with a round trip under way, each with the subscriptions held back until it ends
	flying map[*sub]string       // the subscriptions in those round trips, with their node
	done   <-chan struct{}       // closed when the current run has returned

	// guarded by h.mu
	queue   []*sub // subscriptions whose state on the server is to change, in order
	running bool
	stop    context.CancelFunc // ends the goroutine
	exited  chan struct{}      // closed when the goroutine has returned
}

func newLine(h *hub, sharded bool) *line {
	mode := h.client.Mode()
	return &line{
		h: h, sharded: sharded,
		route:   sharded && mode == rueidis.ClientModeCluster,
		follow:  mode == rueidis.ClientModeSentinel,
		kick:    make(chan struct{}, 1),
		lost:    make(chan *lineConn),
		results: make(chan nodeResult),
	}
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
	addr  string // its node in a routing line; "" otherwise
	dc    rueidis.DedicatedClient
	nodes string       // the client's nodes when it was dialed (see nodes)
	gone  <-chan error // closed when the connection is lost
}

// change is one subscription's change sent to the server.
type change struct {
	b         *sub
	subscribe bool   // SUBSCRIBE; UNSUBSCRIBE otherwise
	node      string // the connection it goes to (see lineConn.addr)
	slot      uint16 // its channel's hash slot, in a routing line (set by byNode)
}

func (l *line) run(ctx context.Context, exited chan struct{}) {
	defer close(exited)
	l.conns, l.slots, l.down, l.parked, l.done = make(map[string]*lineConn), &slotTable{}, make(map[string]*nodePause), nil, exited
	l.busy, l.flying = make(map[string][]*sub), make(map[*sub]string)
	defer l.end()
	resume := time.NewTimer(time.Hour)
	resume.Stop()
	defer resume.Stop()
	// A round trip under way when the line stops is finished (bounded by unsubscribeTimeout),
	// so that the changes it carries, the last waiters' unsubscriptions among them, are applied.
	sendCtx, cancelSend := context.WithCancel(context.Background())
	defer cancelSend()
	defer context.AfterFunc(ctx, func() { time.AfterFunc(unsubscribeTimeout, cancelSend) })()
	defer l.awaitNodes()
	retry := backoff.New(retryMin, retryMax)
	var follow <-chan time.Time
	if l.follow || l.route { // moveIfMoved's checks
		tick := time.NewTicker(followEvery)
		defer tick.Stop()
		follow = tick.C
	}
	for {
		select {
		case c := <-l.lost:
			l.drop(c, nil, nil)
			continue
		case <-follow:
			l.moveIfMoved()
			continue
		case <-resume.C:
			l.unpark()
			continue
		case r := <-l.results:
			if l.settle(r) {
				retry = backoff.New(retryMin, retryMax)
			}
			continue
		default:
		}
		batch := l.take()
		if len(batch) == 0 {
			select {
			case <-l.kick:
			case <-ctx.Done():
				return
			case c := <-l.lost:
				l.drop(c, nil, nil)
			case <-follow:
				l.moveIfMoved()
			case <-resume.C:
				l.unpark()
			case r := <-l.results:
				if l.settle(r) {
					retry = backoff.New(retryMin, retryMax)
				}
			}
			continue
		}
		confirmed, failed, err := l.sendAll(sendCtx, batch)
		if len(l.parked) > 0 {
			resume.Reset(time.Until(l.nextResume()))
		}
		if err != nil {
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

// sendAll applies batch and reports whether a subscription was confirmed. A line that does
// not route sends it on its connection; when that failed, sendAll returns the error and the
// nodes of the failed connection (lineConn.nodes), and the line pauses before the changes
// still to make are sent again. A routing line sends each node's part from a goroutine of
// its own (dispatch) and learns the outcome later (settle); only a slot table it could not
// read is its error here.
func (l *line) sendAll(ctx context.Context, batch []change) (confirmed bool, failed string, err error) {
	parts, err := l.byNode(ctx, batch)
	if err != nil {
		l.lose(batch, err)
		return false, "", err
	}
	if l.route {
		for _, part := range parts {
			l.dispatch(ctx, part)
		}
		return false, "", nil
	}
	c := l.conns[""]
	if c == nil {
		c, _ = l.dial("") // only a routing line's dial fails
		l.conns[""] = c
	}
	confirmed, _, err = l.send(ctx, c, parts[0], lineChannelsPerCommand)
	if err != nil {
		l.drop(c, parts[0], err)
		return confirmed, c.nodes, err
	}
	return confirmed, "", nil
}

// nodeResult is the outcome of a routing line's round trip to one node (dispatch).
type nodeResult struct {
	addr      string
	c         *lineConn // the connection it went on; nil when none could be had
	dialed    bool      // c is new, not yet among the line's connections
	part      []change
	confirmed bool
	later     error // see send
	err       error // c failed; or, c nil, the node is not one rueidis knows
}

// dispatch sends part, the changes routed to one node, from a goroutine of its own, dialing
// the node first if the line has no connection to it, and hands the outcome to run (settle).
// So a node that does not answer (stopped, cut off) holds up only its own changes: while its
// round trip is under way, the changes routed to it are held back (busy, flying), and the
// other nodes' go out. Changes routed to a paused node wait for its pause to end (park).
func (l *line) dispatch(ctx context.Context, part []change) {
	addr := part[0].node
	if l.paused(addr) {
		l.park(part)
		return
	}
	if held, busy := l.busy[addr]; busy {
		for _, ch := range part {
			held = append(held, ch.b)
		}
		l.busy[addr] = held
		return
	}
	l.busy[addr] = nil
	for _, ch := range part {
		l.flying[ch.b] = addr
	}
	r := nodeResult{addr: addr, c: l.conns[addr], part: part}
	go func() {
		if r.c == nil {
			r.c, r.err = l.dial(addr)
			r.dialed = r.c != nil
		}
		if r.c != nil {
			r.confirmed, r.later, r.err = l.send(ctx, r.c, part, lineChannelsPerCommand)
		}
		l.results <- r
	}()
}

// settle applies on run's goroutine the outcome of a round trip that dispatch sent, and
// queues again the changes held back meanwhile. A node that failed, or asked to try later,
// is paused (pauseNode). It reports whether a subscription was confirmed.
func (l *line) settle(r nodeResult) bool {
	// A connection lost while the round trip was under way was dropped then (run took its
	// signal); what the round trip applied afterwards went with it.
	dropped := r.c != nil && !r.dialed && l.conns[r.addr] != r.c
	held := l.busy[r.addr]
	delete(l.busy, r.addr)
	for _, ch := range r.part {
		delete(l.flying, ch.b)
	}
	if r.dialed {
		l.conns[r.addr] = r.c
		select {
		case <-r.c.gone: // lost before it was among the line's connections: run passed its signal over
			r.err = cmp.Or(r.err, errors.New("pubsub: connection lost"))
		default:
		}
	}
	switch {
	case r.c == nil: // a node rueidis does not know
		l.slots.stale = true
		l.lose(r.part, r.err)
		l.loseNode(r.addr)
		l.pauseNode(r.addr)
	case r.err != nil:
		l.drop(r.c, r.part, r.err)
		l.pauseNode(r.addr)
	case r.later != nil:
		l.pauseNode(r.addr)
	default:
		delete(l.down, r.addr)
	}
	if dropped {
		l.loseNode(r.addr)
	}
	l.requeue(held)
	return r.confirmed
}

// awaitNodes waits for the round trips under way to end, and settles them: the line is
// stopping (their context ends unsubscribeTimeout after the line's).
func (l *line) awaitNodes() {
	for len(l.busy) > 0 {
		l.settle(<-l.results)
	}
}

// nodePause is a routing line's pause of one node after a failure: until, growing by retry
// while the node keeps failing.
type nodePause struct {
	until time.Time
	retry *backoff.Backoff
}

// pauseNode pauses addr, a routing line's node that failed, for its next backoff delay.
func (l *line) pauseNode(addr string) {
	p := l.down[addr]
	if p == nil {
		p = &nodePause{retry: backoff.New(retryMin, retryMax)}
		l.down[addr] = p
	}
	p.until = time.Now().Add(p.retry.Next())
}

// paused reports whether addr is a paused node of a routing line.
func (l *line) paused(addr string) bool {
	p := l.down[addr]
	return p != nil && time.Now().Before(p.until)
}

// park keeps the subscriptions of part, routed to a paused node, until the earliest pause
// ends, or for parkedRecheck at most (nextResume); they are then queued again and routed
// afresh, by a slot table read again (unpark): once a failed master's replica is promoted,
// its slots' subscriptions go to it without waiting for the dead node's pause to end.
func (l *line) park(part []change) {
	for _, ch := range part {
		l.parked = append(l.parked, ch.b)
	}
}

// parkedRecheck bounds how long subscriptions routed to a paused node wait before they are
// routed again (park).
const parkedRecheck = 250 * time.Millisecond

// nextResume returns when the parked subscriptions are to be routed again: when the
// earliest node pause still to come ends, parkedRecheck from now at the latest.
func (l *line) nextResume() time.Time {
	now := time.Now()
	next := now.Add(parkedRecheck)
	for _, p := range l.down {
		if p.until.After(now) && p.until.Before(next) {
			next = p.until
		}
	}
	return next
}

// unpark queues again the parked subscriptions, to be routed by a slot table read again.
func (l *line) unpark() {
	l.slots.stale = true
	l.requeue(l.parked)
	l.parked = nil
}

// requeue queues subs again.
func (l *line) requeue(subs []*sub) {
	if len(subs) == 0 {
		return
	}
	l.h.mu.Lock()
	defer l.h.mu.Unlock()
	for _, b := range subs {
		l.queueLocked(b)
	}
}

// byNode returns batch in parts, one per connection, in order. Outside a routing line that
// is one part. In a routing line an unsubscription goes to the node its subscription is on
// (change.node), a subscription to the master of its channel's slot, the slot table read
// again first when it may be out of date.
func (l *line) byNode(ctx context.Context, batch []change) ([][]change, error) {
	if !l.route {
		return [][]change{batch}, nil
	}
	if err := l.slots.load(ctx, l.h.client); err != nil {
		return nil, err
	}
	var order []string
	parts := make(map[string][]change)
	for _, ch := range batch {
		ch.slot = keys.Slot(ch.b.key.channel)
		if ch.subscribe {
			ch.node = l.slots.owner(ch.slot)
		}
		if _, ok := parts[ch.node]; !ok {
			order = append(order, ch.node)
		}
		parts[ch.node] = append(parts[ch.node], ch)
	}
	out := make([][]change, 0, len(order))
	for _, addr := range order {
		part := parts[addr]
		// A node takes the channels of one slot per command; the changes of one channel
		// keep their order.
		slices.SortStableFunc(part, func(a, b change) int {
			return cmp.Compare(a.slot, b.slot)
		})
		out = append(out, part)
	}
	return out, nil
}

// drop closes c, which is lost (with err, while batch was being sent on it), and queues its
// subscriptions to be made again (lose, loseNode). A connection the line no longer uses
// has been dropped already: only batch is queued again.
func (l *line) drop(c *lineConn, batch []change, err error) {
	l.lose(batch, err)
	if l.conns[c.addr] != c {
		return
	}
	delete(l.conns, c.addr)
	c.dc.Close()
	l.slots.stale = true
	l.loseNode(c.addr)
}

// moveIfMoved closes a connection of the line that the client has moved away from, queueing
// its subscriptions to be made again on a new one: on a Sentinel client, when the client
// now sends commands to other nodes than when it was dialed (after a failover, it may still
// be to the old master); on a routing line, each connection to a node the client no longer
// lists.
func (l *line) moveIfMoved() {
	if l.route {
		nodes := l.h.client.Nodes()
		for addr, c := range l.conns {
			if _, ok := nodes[addr]; !ok {
				l.drop(c, nil, nil)
			}
		}
		return
	}
	if c := l.conns[""]; c != nil && c.nodes != l.nodes() {
		l.drop(c, nil, nil)
	}
}

// pause waits before the line dials again after a connection to failed (its nodes) failed:
// retry's next delay, cut short on a Sentinel line once the client sends commands to other
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

// dial returns a new connection to addr (see lineConn.addr) whose messages reach the hub's
// waiters; the caller adds it to the line's connections. The client's nodes are read before
// the connection is taken, so that a failover in between makes the next check move the line
// rather than hide the change. A routing line dials from dispatch's goroutine.
func (l *line) dial(addr string) (*lineConn, error) {
	client := l.h.client
	if l.route {
		if client = client.Nodes()[addr]; client == nil {
			return nil, fmt.Errorf("pubsub: no connection to cluster node %q", addr)
		}
	}
	c := &lineConn{addr: addr, nodes: l.nodes()}
	c.dc, _ = client.Dedicate()
	c.name()
	hooks := rueidis.PubSubHooks{OnMessage: l.deliver, OnSubscription: func(rueidis.PubSubSubscription) {}}
	if l.sharded {
		hooks.OnSubscription = func(s rueidis.PubSubSubscription) {
			if s.Kind == "sunsubscribe" {
				l.endedByServer(addr, s.Channel)
			}
		}
	}
	c.gone = c.dc.SetPubSubHooks(hooks)
	done := l.done
	go func() {
		<-c.gone
		select {
		case l.lost <- c:
		case <-done:
		}
	}()
	return c, nil
}

// ConnectionName is the name a line gives its connections (CLIENT SETNAME), unless the
// application named them (rueidis.ClientOption.ClientName). They serve every Subscriber, and
// every lock Client, on the rueidis client, so the name carries no Client's id.
const ConnectionName = "goredisson:pubsub"

// name names c's connection ConnectionName, best effort: a server that refuses it (an ACL
// without +client|setname) leaves it unnamed, and one the application named keeps its name.
func (c *lineConn) name() {
	ctx, cancel := context.WithTimeout(context.Background(), connname.Timeout)
	defer cancel()
	_ = connname.Set(ctx, c.dc, ConnectionName)
}

// endedByServer records that node addr ended the sharded subscription of channel without
// being asked (its slot moved to another master, or the master became a replica): the
// subscription is made again, on the slot's master. It runs on the connection's reader
// goroutine, where the line's own unsubscriptions are confirmed too; those are of
// subscriptions that are not live, or not on that node's connection any more.
func (l *line) endedByServer(addr, channel string) {
	h := l.h
	h.mu.Lock()
	defer h.mu.Unlock()
	b := h.live[subKey{channel: channel, sharded: true}]
	if b == nil || !b.onServer || b.node != addr {
		return
	}
	b.onServer = false
	l.queueLocked(b)
}

// nodes names the nodes that a Sentinel line's client sends commands to (its master, and
// the replica it reads from if it has one), "" for another line.
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
		addr, flying := l.flying[b]
		switch {
		case b.finished:
		case flying: // its round trip is under way: it is looked at again when that ends
			l.busy[addr] = append(l.busy[addr], b)
		case live && !b.onServer:
			out = append(out, change{b: b, subscribe: true})
		case !live && b.onServer:
			out = append(out, change{b: b, node: b.node})
		case !live:
			b.finishLocked()
		}
	}
	l.queue = append(l.queue[:0], l.queue[n:]...)
	return out
}

// send applies batch on c in one round trip, with at most perCommand channels per command.
// It reports whether a subscription was confirmed, and returns an error when the connection
// failed. The server refusing a subscription is not an error of send: that subscription
// fails. A cluster node that does not serve a channel's slot is not either: the
// subscription is queued again, sent to the node a MOVED names, or, after an ASK,
// TRYAGAIN or CLUSTERDOWN, sent again once the line has paused (later).
func (l *line) send(ctx context.Context, c *lineConn, batch []change, perCommand int) (confirmed bool, later, err error) {
	cmds, parts := l.commands(c.dc, batch, perCommand)
	res := c.dc.DoMulti(ctx, cmds...)
	if !l.resp2.Load() && len(res) > 0 && errors.Is(res[0].Error(), rueidis.ErrRESP2PubSubMixed) {
		l.resp2.Store(true) // refused before anything was sent
		cmds, parts = l.commands(c.dc, batch, perCommand)
		res = c.dc.DoMulti(ctx, cmds...)
	}
	var refused []change
	for i, part := range parts {
		rerr := res[i].Error()
		var re *rueidis.RedisError
		switch {
		case rerr == nil:
			l.applied(c.addr, part)
			confirmed = confirmed || part[0].subscribe
		case !errors.As(rerr, &re):
			return confirmed, later, rerr
		case l.redirected(part, re):
			if _, moved := re.IsMoved(); !moved {
				later = rerr
			}
		case len(part) == 1 || !part[0].subscribe:
			l.refused(part, rerr)
		default:
			refused = append(refused, part...)
		}
	}
	if len(res) > len(parts) {
		if err := res[len(parts)].NonRedisError(); err != nil {
			return confirmed, later, err
		}
	}
	if len(refused) > 0 { // a SUBSCRIBE of many channels refused: find which, one each
		more, again, err := l.send(ctx, c, refused, 1)
		return confirmed || more, cmp.Or(later, again), err
	}
	return confirmed, later, nil
}

// redirected reports whether re is a cluster node's answer that part's channels are served
// elsewhere or not now, and if so queues part's subscriptions again, noting a MOVED's node
// in the slot table. An unsubscription so answered is done: the node holds no
// subscription of that slot.
func (l *line) redirected(part []change, re *rueidis.RedisError) bool {
	addr, moved := re.IsMoved()
	_, ask := re.IsAsk()
	if !l.route || !moved && !ask && !re.IsTryAgain() && !re.IsClusterDown() {
		return false
	}
	if moved {
		l.slots.move(part[0].slot, addr)
	}
	h := l.h
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, ch := range part {
		if ch.subscribe {
			l.queueLocked(ch.b)
		} else {
			ch.b.onServer = false
			ch.b.finishLocked()
		}
	}
	return true
}

// commands returns the commands that apply batch, in order, each with the changes it
// carries (runs of the same change, and in a routing line of the same slot, at most
// perCommand channels each), and a closing PING, whose reply means the server has applied
// them all; on RESP2, where a subscribed connection takes no PING among them, an
// UNSUBSCRIBE of a barrier channel when the last is a SUBSCRIBE.
func (l *line) commands(dc rueidis.DedicatedClient, batch []change, perCommand int) (rueidis.Commands, [][]change) {
	var cmds rueidis.Commands
	var parts [][]change
	for start := 0; start < len(batch); {
		end := start + 1
		for end < len(batch) && end-start < perCommand && batch[end].subscribe == batch[start].subscribe &&
			(!l.route || batch[end].slot == batch[start].slot) {
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
	switch last := batch[len(batch)-1]; {
	case !l.resp2.Load():
		cmds = append(cmds, dc.B().Ping().Build())
	case last.subscribe && l.route:
		cmds = append(cmds, l.command(dc, false, []string{barrierOf(last.slot)}))
	case last.subscribe:
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

// applied records changes the server of node has applied.
func (l *line) applied(node string, part []change) {
	l.h.mu.Lock()
	defer l.h.mu.Unlock()
	for _, ch := range part {
		b := ch.b
		if ch.subscribe {
			b.onServer, b.node = true, node // one that left meanwhile is queued to unsubscribe
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

// lose records that the changes of batch were not made, the connection failing with err: a
// subscription never confirmed fails with err (Subscribe returns it), every other live one
// is queued to be made again, and so is an unsubscription whose subscription is still on a
// connection.
func (l *line) lose(batch []change, err error) {
	h := l.h
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, ch := range batch {
		switch b := ch.b; {
		case b.finished:
		case !ch.subscribe:
			if b.onServer {
				l.queueLocked(b)
			}
		case b.confirmations() == 0:
			b.fail(err)
		default:
			l.queueLocked(b)
		}
	}
}

// loseNode records that the line's connection to addr is gone, with the subscriptions on
// it: every live one is queued to be made again, and an ending one finishes.
func (l *line) loseNode(addr string) {
	h := l.h
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, m := range []map[subKey]*sub{h.draining, h.live} {
		for key, b := range m {
			if key.sharded != l.sharded || !b.onServer || b.node != addr {
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

// end unsubscribes and closes the line's connections, and finishes every subscription of the
// line's kind: the hub has no user.
func (l *line) end() {
	h := l.h
	byNode := make(map[string][]change)
	h.mu.Lock()
	for _, m := range []map[subKey]*sub{h.live, h.draining} {
		for key, b := range m {
			if key.sharded == l.sharded && b.onServer && l.conns[b.node] != nil {
				b.onServer = false // so that its confirmation is not taken for the server's (endedByServer)
				byNode[b.node] = append(byNode[b.node], change{b: b, node: b.node, slot: keys.Slot(b.key.channel)})
			}
		}
	}
	h.mu.Unlock()
	for addr, c := range l.conns {
		if changes := byNode[addr]; len(changes) > 0 {
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
	l.queue, l.parked = nil, nil
	l.running = false
}
