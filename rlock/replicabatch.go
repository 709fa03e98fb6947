package rlock

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/redis/rueidis"

	"github.com/goredisson/goredisson/internal/keys"
	"github.com/goredisson/goredisson/internal/slotmap"
	"github.com/goredisson/goredisson/lua"
)

// Replica sync batches the single-script writes of a Client by master: the calls that
// arrive while a batch is on its way to a master go together in the next one, as their
// scripts pipelined on one dedicated connection followed by one WAIT, which covers them
// all. A Client then holds one dedicated connection per master for them, and many
// concurrent writes cost a round trip together instead of one each.

// batchTimeout bounds one batch's round trips beyond ReplicaSyncTimeout (which WAIT itself
// takes at most).
const batchTimeout = 5 * time.Second

// errBatchNoReply is the reply of a call whose batch met its bound (ReplicaSyncTimeout +
// batchTimeout) before its master answered: a master that hangs, not the caller's context
// ending. The call may have run. It is a connection error to the callers: a waiter tries
// again, and an acquire gives back what the call may have taken.
var errBatchNoReply = errors.New("rlock: no reply from the master within the replica sync batch's bound (ReplicaSyncTimeout + 5 s)")

// maxBatch is the most calls one batch carries.
const maxBatch = 1000

// maxRounds is the most batches of one master on their way at once, each on a dedicated
// connection of its own: a call does not wait behind a batch whose WAIT blocks while
// another connection is free.
const maxRounds = 4

// batchCall is one write waiting in, or carried by, a batch.
type batchCall struct {
	lua.Call
	res  rueidis.RedisResult
	err  error
	sent bool          // taken into a batch: it may run, and its caller waits for done
	done chan struct{} // closed once res and err are set
}

// batcher is the batch of one master: the calls waiting for the next round trip, and how
// many batches are on their way.
type batcher struct {
	r      *replicaSync
	addr   string // the master's address in a cluster (a key of rc.Nodes), "" outside one
	mu     sync.Mutex
	queue  []*batchCall
	rounds int
}

// batched runs calls on the master of key, in that master's next batch, and waits for its
// replicas: it returns one reply per call and the batch's error (see syncedConn.exec for
// both). ok is false, and nothing was sent, when the master is not known (a cluster whose
// slot map is being read or could not be): the caller then makes the calls on its own. A
// call still waiting for its batch when ctx ends is taken out, nothing sent, with errNoTurn
// as its reply (and as the error, when no call was sent).
func (r *replicaSync) batched(ctx context.Context, key string, calls ...lua.Call) (res []rueidis.RedisResult, err error, ok bool) {
	b := r.batcherOf(ctx, key)
	if b == nil {
		return nil, nil, false
	}
	if ctx.Err() != nil { // a batch is sent under a context of its own: nothing goes once ctx ended
		err = noTurn(ctx)
		return failedAll(len(calls), err), err, true
	}
	bcs := make([]batchCall, len(calls))
	b.mu.Lock()
	for i := range bcs {
		bcs[i] = batchCall{Call: calls[i], done: make(chan struct{})}
		b.queue = append(b.queue, &bcs[i])
	}
	start := b.rounds < maxRounds
	if start {
		b.rounds++
	}
	b.mu.Unlock()
	if start {
		b.send()
	}
	res = make([]rueidis.RedisResult, len(calls))
	sent := false
	for i := range bcs {
		c := &bcs[i]
		select {
		case <-c.done:
		case <-ctx.Done():
			b.mu.Lock()
			taken := c.sent
			if !taken {
				b.remove(c)
			}
			b.mu.Unlock()
			if !taken {
				res[i] = rueidis.NewErrorResult(noTurn(ctx))
				continue
			}
			<-c.done // bounded by the batch's own timeout
		}
		sent = true
		res[i] = c.res
		if c.err != nil {
			err = c.err
		}
	}
	if !sent {
		err = res[0].Error()
	}
	return res, err, true
}

// remove takes c, not yet sent, out of the queue. Called with b.mu held.
func (b *batcher) remove(c *batchCall) {
	for i, q := range b.queue {
		if q == c {
			b.queue = append(b.queue[:i], b.queue[i+1:]...)
			return
		}
	}
}

// send sends the queue as one batch, and the calls that arrived meanwhile in a goroutine
// of its own, so that the caller that started the round is not kept serving others.
func (b *batcher) send() {
	b.mu.Lock()
	n := min(len(b.queue), maxBatch)
	calls := b.queue[:n:n]
	b.queue = append([]*batchCall(nil), b.queue[n:]...)
	for _, c := range calls {
		c.sent = true
	}
	b.mu.Unlock()
	if len(calls) > 0 {
		b.round(calls)
	}
	b.mu.Lock()
	if len(b.queue) == 0 {
		b.rounds--
		b.mu.Unlock()
		return
	}
	b.mu.Unlock()
	b.r.sending.Go(b.send)
}

// wait returns once no batch is being sent: Close calls it after the calls that make
// batches have ended.
func (r *replicaSync) wait() {
	if r != nil {
		r.sending.Wait()
	}
}

// round makes one batch of calls and completes each.
func (b *batcher) round(calls []*batchCall) {
	r := b.r
	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(r.timeoutMs)*time.Millisecond+batchTimeout)
	defer cancel()
	client := r.rc
	if b.addr != "" {
		client = r.rc.Nodes()[b.addr]
	}
	lcalls := make([]lua.Call, len(calls))
	for i, c := range calls {
		lcalls[i] = c.Call
	}
	var res []rueidis.RedisResult
	var err error
	if client == nil { // the master left the client's view since the map was read
		r.epoch.Add(1)
		res = failedAll(len(calls), errMasterGone)
	} else {
		client.Dedicated(func(dc rueidis.DedicatedClient) error {
			c := syncedConn{r: r, dc: dc, slot: r.slotOf(calls[0].Keys[0])}
			res, err = c.do(ctx, func(cc rueidis.CommandClient, then func() rueidis.Commands) ([]rueidis.RedisResult, []rueidis.RedisResult) {
				return lua.ExecCalls(ctx, cc, lcalls, then)
			})
			if n, fresh := r.count(c.slot); fresh { // the master's count holds for every slot it serves
				for i, call := range calls {
					if s := r.slotOf(call.Keys[0]); s != c.slot && !failed(res[i]) {
						r.store(s, n)
					}
				}
			}
			return nil
		})
	}
	// A deadline met here is the batch's own (rueidis may report it a moment before ctx.Err
	// does), not a caller's: report the master's silence.
	for i := range res {
		if errors.Is(res[i].Error(), context.DeadlineExceeded) {
			res[i] = rueidis.NewErrorResult(errBatchNoReply)
		}
	}
	if errors.Is(err, context.DeadlineExceeded) {
		err = errBatchNoReply
	}
	for i, c := range calls {
		c.res = res[i]
		if failed(res[i]) {
			r.epoch.Add(1) // a redirect or a lost connection: the slot map may be stale
		} else {
			c.err = err
		}
		close(c.done)
	}
}

// failedAll returns n replies that are each err.
func failedAll(n int, err error) []rueidis.RedisResult {
	res := make([]rueidis.RedisResult, n)
	for i := range res {
		res[i] = rueidis.NewErrorResult(err)
	}
	return res
}

// errMasterGone is the reply of a batched call whose master is no longer one of the
// client's nodes: nothing was sent.
var errMasterGone = errors.New("rlock: the master left the cluster client's view")

// batcherOf returns the batcher of the master of key, nil when that master is not known.
func (r *replicaSync) batcherOf(ctx context.Context, key string) *batcher {
	addr := ""
	if r.cluster {
		if addr = r.masterOf(ctx, keys.Slot(key)); addr == "" {
			return nil
		}
	}
	r.batchersMu.Lock()
	defer r.batchersMu.Unlock()
	b := r.batchers[addr]
	if b == nil {
		b = &batcher{r: r, addr: addr}
		r.batchers[addr] = b
	}
	return b
}

// slotOf is the count cache entry of key: its hash slot in a cluster, else 0.
func (r *replicaSync) slotOf(key string) uint16 {
	if r.cluster {
		return keys.Slot(key)
	}
	return 0
}

// slotMap is a cluster's master address by hash slot, read in topology epoch epoch.
type slotMap struct {
	addrs []string
	epoch uint64
}

// slotMapTimeout bounds the reading of the slot map.
const slotMapTimeout = 2 * time.Second

// masterOf returns the address of the master of slot, reading the cluster's slot map when
// none was read since the last sign of a topology change; a call that finds the map being
// read waits for that read (at most slotMapTimeout), so that a burst of calls does not
// make each its own call on a dedicated connection (rueidis keeps each such connection, with
// its buffers, in its pool). It returns "" when the read fails or ctx ends first, when the
// map read is older than the change this call saw, or when no master serves slot.
func (r *replicaSync) masterOf(ctx context.Context, slot uint16) string {
	m := r.slots.Load()
	if epoch := r.epoch.Load(); m == nil || m.epoch != epoch {
		if m = r.readSlots(ctx); m == nil || m.epoch < epoch {
			return ""
		}
	}
	return m.addrs[slot]
}

// readSlots reads the slot map, or waits for the read that another call started, and
// returns the map then stored (nil when none ever was, or when ctx ended first).
func (r *replicaSync) readSlots(ctx context.Context) *slotMap {
	r.slotsMu.Lock()
	done := r.reading
	if done == nil {
		done = make(chan struct{})
		r.reading = done
		r.slotsMu.Unlock()
		epoch := r.epoch.Load()
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), slotMapTimeout)
		addrs, err := slotmap.Read(rctx, r.rc)
		cancel()
		if err != nil {
			r.log.Debug("rlock: could not read the cluster's slot map; replica sync calls are made one by one", "error", err)
		} else {
			r.slots.Store(&slotMap{addrs: addrs, epoch: epoch})
		}
		r.slotsMu.Lock()
		r.reading = nil
		r.slotsMu.Unlock()
		close(done)
	} else {
		r.slotsMu.Unlock()
		select {
		case <-done:
		case <-ctx.Done():
			return nil
		}
	}
	return r.slots.Load()
}
