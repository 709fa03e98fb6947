package pubsub

import (
	"context"
	"strconv"
	"sync"

	"github.com/redis/rueidis"

	"github.com/goredisson/goredisson/internal/keys"
	"github.com/goredisson/goredisson/internal/slotmap"
)

// slotTable names the master of each hash slot of a Redis Cluster, for the sharded
// subscriptions of a line: CLUSTER SLOTS, corrected slot by slot by the MOVED replies the
// line gets. It is read again when it may have gone out of date: a connection to a node was
// lost, or a node ended a subscription itself (a slot moved). Its line's goroutine reads
// it; the round trips it sends to the nodes record MOVED replies in it (move).
type slotTable struct {
	stale bool // to be read again before the next subscription is routed

	mu      sync.Mutex
	masters []string // by slot; nil until read
}

// load reads the table again from the cluster behind client when it is missing or stale.
func (t *slotTable) load(ctx context.Context, client rueidis.Client) error {
	t.mu.Lock()
	read := t.masters != nil
	t.mu.Unlock()
	if read && !t.stale {
		return nil
	}
	masters, err := slotmap.Read(ctx, client)
	if err != nil {
		return err
	}
	t.mu.Lock()
	t.masters, t.stale = masters, false
	t.mu.Unlock()
	return nil
}

// owner returns the master of slot, "" when the table names none.
func (t *slotTable) owner(slot uint16) string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.masters[slot]
}

// move records a MOVED reply: slot is served by addr.
func (t *slotTable) move(slot uint16, addr string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.masters != nil {
		t.masters[slot] = addr
	}
}

// barrierOf returns a channel of slot that nothing subscribes: on RESP2, unsubscribing it
// closes a batch of sharded subscriptions to one node (see barrierChannel), and a cluster
// node accepts only channels of its own slots.
func barrierOf(slot uint16) string {
	for i := 0; ; i++ {
		name := barrierChannel + ":{" + strconv.Itoa(i) + "}"
		if keys.Slot(name) == slot {
			return name
		}
	}
}
