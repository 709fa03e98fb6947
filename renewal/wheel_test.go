package renewal

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fakeServer answers renewal calls from a set of held (name, field) pairs; it stands in for
// nothing but the reply of one script, to test the wheel's bookkeeping without a server.
type fakeServer struct {
	mu     sync.Mutex
	held   map[string]string // name → field
	fail   bool
	chunks [][]string
}

func (f *fakeServer) renew(_ context.Context, _ time.Duration, chunks [][]item) []chunkResult {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]chunkResult, len(chunks))
	for i, c := range chunks {
		var names []string
		for _, it := range c {
			names = append(names, it.e.name)
		}
		f.chunks = append(f.chunks, names)
		if f.fail {
			out[i].err = errors.New("connection refused")
			continue
		}
		for _, it := range c {
			v := int64(0)
			if f.held[it.e.name] == it.field {
				v = 1
			}
			out[i].renewed = append(out[i].renewed, v)
		}
	}
	return out
}

type lostRec struct {
	mu   sync.Mutex
	list []string
}

func (l *lostRec) add(name, field string, cause error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.list = append(l.list, fmt.Sprintf("%s/%s/%v", name, field, cause))
}

func newTestWheel(opts Options) (*Wheel, *fakeServer, *lostRec) {
	f := &fakeServer{held: map[string]string{}}
	lost := &lostRec{}
	opts.OnLost = lost.add
	w := newWheel(opts, f.renew)
	w.clock = func() int64 { return w.now } // ticks move only when the test advances them
	return w, f, lost
}

// advanceRound moves the wheel one full renewal interval.
func advanceRound(w *Wheel) {
	for range w.n {
		w.advance()
	}
}

func TestWheelBatchesAFullPass(t *testing.T) {
	w, f, lost := newTestWheel(Options{Lease: 30 * time.Second, Buckets: 8})
	// Locks registered at different ticks land in different buckets.
	for i := range 1050 {
		name := fmt.Sprintf("lock-%d", i)
		f.held[name] = "c:1"
		w.Add(name, "c:1")
		if i%150 == 0 {
			w.advance()
		}
	}
	f.chunks = nil
	before := w.Stats().Calls
	advanceRound(w)
	calls := w.Stats().Calls - before
	assert.Equal(t, uint64(11), calls, "1050 locks, batch 100: ceil(1050/100) calls per interval")
	renewed := map[string]bool{}
	for _, c := range f.chunks {
		assert.LessOrEqual(t, len(c), 100)
		for _, n := range c {
			renewed[n] = true
		}
	}
	assert.Len(t, renewed, 1050, "every lock renewed within one interval")
	assert.Empty(t, lost.list)
	assert.Equal(t, 1050, w.Len())
}

func TestWheelReentrantHoldsKeepOneEntry(t *testing.T) { // RL-28 bookkeeping
	w, f, _ := newTestWheel(Options{})
	f.held["a"] = "c:1"
	w.Add("a", "c:1")
	w.Add("a", "c:1")
	assert.Equal(t, 2, w.Count("a", "c:1"))
	w.Remove("a", "c:1")
	assert.Equal(t, 1, w.Count("a", "c:1"))
	w.Remove("a", "c:1")
	assert.Equal(t, 0, w.Len(), "final release removes the entry before it returns")
	f.chunks = nil
	advanceRound(w)
	assert.Empty(t, f.chunks, "a released lock is never renewed")

	// The next owner's registration is unaffected by the previous owner's pairs.
	f.held["a"] = "c:2"
	w.Add("a", "c:2")
	advanceRound(w)
	assert.Equal(t, [][]string{{"a"}}, f.chunks)
	assert.Equal(t, 1, w.Count("a", "c:2"))
}

func TestWheelReportsFieldGone(t *testing.T) {
	w, f, lost := newTestWheel(Options{})
	f.held["a"] = "c:1"
	w.Add("a", "c:1")
	w.Add("b", "c:1") // field never held on the server
	advanceRound(w)
	assert.Equal(t, []string{"b/c:1/" + ErrNotHeld.Error()}, lost.list)
	assert.Equal(t, 1, w.Len())
	assert.Equal(t, uint64(1), w.Stats().Lost)
}

func TestWheelRetriesThenDeclaresExpiry(t *testing.T) {
	w, f, lost := newTestWheel(Options{Lease: 3 * time.Millisecond * 8, Buckets: 8})
	f.held["a"] = "c:1"
	w.Add("a", "c:1")
	f.fail = true
	advanceRound(w)
	require.Empty(t, lost.list, "renewal keeps retrying while the lease may still run")
	require.Equal(t, 1, w.Len())
	calls := len(f.chunks)
	w.advance()
	assert.Greater(t, len(f.chunks), calls, "a failed renewal is retried at the next tick")
	// Backdate the last success past the lease: the next failure declares the lock lost.
	w.mu.Lock()
	w.entries["a"].lastOK = time.Now().Add(-time.Hour)
	w.mu.Unlock()
	w.advance()
	assert.Equal(t, []string{"a/c:1/" + ErrLeaseExpired.Error()}, lost.list)
	assert.Equal(t, 0, w.Len())
}

func TestWheelClusterChunksBySlot(t *testing.T) {
	w, f, _ := newTestWheel(Options{Cluster: true, BatchSize: 3})
	for _, n := range []string{"{x}1", "{y}1", "{x}2", "{x}3", "{x}4", "{y}2"} {
		f.held[n] = "c:1"
		w.Add(n, "c:1")
	}
	advanceRound(w)
	for _, c := range f.chunks {
		assert.LessOrEqual(t, len(c), 3)
		for _, n := range c[1:] {
			assert.Equal(t, c[0][:3], n[:3], "one hash slot per call: %v", c)
		}
	}
	assert.Len(t, f.chunks, 3)
}

func TestWheelCloseStopsRenewal(t *testing.T) {
	f := &fakeServer{held: map[string]string{"a": "c:1"}}
	w := newWheel(Options{Lease: 30 * time.Millisecond}, f.renew)
	go w.run()
	w.Add("a", "c:1")
	require.Eventually(t, func() bool { return w.Stats().Renewed >= 2 }, 5*time.Second, time.Millisecond)
	w.Close()
	n := w.Stats().Calls
	w.Add("b", "c:1")
	assert.Equal(t, 0, w.Len())
	assert.Equal(t, n, w.Stats().Calls)
}

func TestWheelCatchesUpMissedTicks(t *testing.T) {
	w, f, _ := newTestWheel(Options{Buckets: 8})
	f.held["a"] = "c:1"
	w.Add("a", "c:1") // due at tick 8
	w.advanceTo(5)
	assert.Empty(t, f.chunks)
	w.advanceTo(100) // a late timer: the due renewal still happens, once
	assert.Equal(t, [][]string{{"a"}}, f.chunks)
	w.advanceTo(107)
	assert.Len(t, f.chunks, 1)
	w.advanceTo(108)
	assert.Len(t, f.chunks, 2, "renewed one interval after the late pass")
}
