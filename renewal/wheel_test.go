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
	reads  map[string]bool   // "name/field" of read holds
	fail   bool
	chunks [][]string
	onCall func() // runs while a call is out, without f.mu
}

func (f *fakeServer) renew(_ context.Context, _ time.Duration, chunks [][]item) []chunkResult {
	if f.onCall != nil {
		f.onCall()
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]chunkResult, len(chunks))
	for i, c := range chunks {
		var names []string
		for _, it := range c {
			n := it.e.name
			if it.e.read {
				n = "read:" + n
			}
			names = append(names, n)
		}
		f.chunks = append(f.chunks, names)
		if f.fail {
			out[i].err = errors.New("connection refused")
			continue
		}
		for _, it := range c {
			v := int64(0)
			if it.e.read && f.reads[it.e.name+"/"+it.field] || !it.e.read && f.held[it.e.name] == it.field {
				v = 1
			}
			out[i].renewed = append(out[i].renewed, v)
		}
	}
	return out
}

// reports records what the wheel reports, as "name/field/id".
type reports struct {
	mu            sync.Mutex
	renewed, gone []string
}

func (r *reports) onRenewed(name, field string, id uint64, _ time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.renewed = append(r.renewed, fmt.Sprintf("%s/%s/%d", name, field, id))
}

func (r *reports) onGone(name, field string, id uint64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.gone = append(r.gone, fmt.Sprintf("%s/%s/%d", name, field, id))
}

func newTestWheel(t *testing.T, opts Options) (*Wheel, *fakeServer, *reports) {
	f := &fakeServer{held: map[string]string{}}
	r := &reports{}
	opts.OnRenewed, opts.OnGone = r.onRenewed, r.onGone
	opts, err := opts.withDefaults()
	require.NoError(t, err)
	w := newWheel(opts, f.renew)
	w.clock = func() int64 { return w.now } // ticks move only when the test advances them
	return w, f, r
}

// size returns the number of lock names renewed: entries with holds.
func size(w *Wheel) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := 0
	for _, e := range w.entries {
		if len(e.holds) > 0 {
			n++
		}
	}
	return n
}

// advanceRound moves the wheel one full renewal interval.
func advanceRound(w *Wheel) {
	for range w.n {
		w.advance()
	}
}

func TestWheelBatchesAFullPass(t *testing.T) {
	w, f, r := newTestWheel(t, Options{Lease: 30 * time.Second, Buckets: 8})
	// Locks registered at different ticks land in different buckets.
	for i := range 1050 {
		name := fmt.Sprintf("lock-%d", i)
		f.held[name] = "c:1"
		w.Add(name, "c:1", 1)
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
	assert.Empty(t, r.gone)
	assert.Equal(t, 1050, size(w))
}

func TestWheelRemoveStopsRenewal(t *testing.T) { // RL-28 bookkeeping
	w, f, _ := newTestWheel(t, Options{})
	f.held["a"] = "c:1"
	w.Add("a", "c:1", 1)
	w.Remove("a", "c:1")
	assert.Equal(t, 0, size(w), "Remove takes effect before it returns")
	advanceRound(w)
	assert.Empty(t, f.chunks, "a removed hold is never renewed")

	f.held["a"] = "c:2"
	w.Add("a", "c:2", 2)
	advanceRound(w)
	assert.Equal(t, [][]string{{"a"}}, f.chunks)
}

// A name released and taken again within an interval reuses its entry and keeps its tick;
// an entry left without holds is dropped at that tick, renewing nothing.
func TestWheelReusesARemovedNamesEntry(t *testing.T) {
	w, f, r := newTestWheel(t, Options{Buckets: 4})
	entry := func() *entry {
		w.mu.Lock()
		defer w.mu.Unlock()
		return w.entries[entryKey{name: "a"}]
	}
	f.held["a"] = "c:2"
	w.Add("a", "c:1", 1)
	first := entry()
	w.advance()
	w.Remove("a", "c:1")
	w.Add("a", "c:2", 2)
	assert.Same(t, first, entry(), "the entry of a name taken again is reused")
	for range w.n - 2 {
		w.advance()
	}
	assert.Empty(t, f.chunks, "not renewed before its tick")
	w.advance()
	assert.Equal(t, [][]string{{"a"}}, f.chunks, "renewed at the tick of its first Add")
	assert.Equal(t, []string{"a/c:2/2"}, r.renewed)

	w.Remove("a", "c:2")
	assert.Equal(t, 0, size(w))
	advanceRound(w)
	assert.Nil(t, entry(), "an entry without holds is dropped at its tick")
	assert.Len(t, f.chunks, 1, "and renews nothing")
}

func TestWheelReportsFieldGone(t *testing.T) {
	w, f, r := newTestWheel(t, Options{})
	f.held["a"] = "c:1"
	w.Add("a", "c:1", 1)
	w.Add("b", "c:1", 2) // field never held on the server
	advanceRound(w)
	assert.Equal(t, []string{"b/c:1/2"}, r.gone)
	assert.Equal(t, []string{"a/c:1/1"}, r.renewed)
	assert.Equal(t, 1, size(w), "a hold found gone is no longer renewed")
}

func TestWheelNextHolderCheckedAfterGone(t *testing.T) {
	w, f, r := newTestWheel(t, Options{Buckets: 4})
	f.held["a"] = "c:2"
	w.Add("a", "c:1", 1)
	w.Add("a", "c:2", 2)
	advanceRound(w)
	assert.Equal(t, []string{"a/c:1/1"}, r.gone)
	w.advance()
	assert.Equal(t, []string{"a/c:2/2"}, r.renewed, "the next holder of the name is renewed at the next tick")
}

func TestWheelStaleResultNotReported(t *testing.T) {
	w, f, r := newTestWheel(t, Options{})
	w.Add("a", "c:1", 1)
	f.onCall = func() { w.Remove("a", "c:1"); w.Add("a", "c:1", 7) } // released and taken again while the call is out
	advanceRound(w)
	assert.Empty(t, r.gone, "a result sent for hold 1 is not reported for hold 7")
	assert.Equal(t, 1, size(w))
}

func TestWheelRetriesFailedCalls(t *testing.T) {
	w, f, r := newTestWheel(t, Options{Buckets: 8})
	f.held["a"] = "c:1"
	w.Add("a", "c:1", 1)
	f.fail = true
	advanceRound(w)
	calls := len(f.chunks)
	require.Positive(t, calls)
	w.advance()
	assert.Greater(t, len(f.chunks), calls, "a failed renewal is retried at the next tick")
	assert.Empty(t, r.gone, "a failure is not a loss: the caller decides when the lease may be gone")
	assert.Equal(t, uint64(len(f.chunks)), w.Stats().Failed)
	f.fail = false
	w.advance()
	assert.Equal(t, []string{"a/c:1/1"}, r.renewed)
}

func TestWheelClusterChunksBySlot(t *testing.T) {
	w, f, _ := newTestWheel(t, Options{Cluster: true, BatchSize: 3})
	for _, n := range []string{"{x}1", "{y}1", "{x}2", "{x}3", "{x}4", "{y}2"} {
		f.held[n] = "c:1"
		w.Add(n, "c:1", 1)
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
	opts, err := Options{Lease: 30 * time.Millisecond}.withDefaults()
	require.NoError(t, err)
	w := newWheel(opts, f.renew)
	go w.run()
	w.Add("a", "c:1", 1)
	require.Eventually(t, func() bool { return w.Stats().Renewed >= 2 }, 5*time.Second, time.Millisecond)
	w.Close()
	n := w.Stats().Calls
	w.Add("b", "c:1", 2)
	assert.Equal(t, 0, size(w))
	assert.Equal(t, n, w.Stats().Calls)
}

func TestWheelCatchesUpMissedTicks(t *testing.T) {
	w, f, _ := newTestWheel(t, Options{Buckets: 8})
	f.held["a"] = "c:1"
	w.Add("a", "c:1", 1) // due at tick 8
	w.advanceTo(5)
	assert.Empty(t, f.chunks)
	w.advanceTo(100) // a late timer: the due renewal still happens, once
	assert.Equal(t, [][]string{{"a"}}, f.chunks)
	w.advanceTo(107)
	assert.Len(t, f.chunks, 1)
	w.advanceTo(108)
	assert.Len(t, f.chunks, 2, "renewed one interval after the late pass")
}

// Every read hold of a name is sent at each renewal, in calls of its own (their script
// differs), and each is reported on its own; a write hold of the same name is renewed beside
// them as any lock.
func TestWheelRenewsEveryReadHold(t *testing.T) {
	w, f, r := newTestWheel(t, Options{Buckets: 4})
	f.reads = map[string]bool{"r/c:1": true, "r/c:2": true}
	f.held["r"] = "c:1:write"
	w.AddRead("r", "c:1", 1)
	w.AddRead("r", "c:2", 2)
	w.Add("r", "c:1:write", 3)
	assert.Equal(t, 2, size(w), "read holds and the write hold are separate entries")
	advanceRound(w)
	assert.ElementsMatch(t, [][]string{{"r"}, {"read:r", "read:r"}}, f.chunks)
	assert.ElementsMatch(t, []string{"r/c:1/1", "r/c:2/2", "r/c:1:write/3"}, r.renewed)

	delete(f.reads, "r/c:2")
	f.chunks, r.renewed = nil, nil
	advanceRound(w)
	assert.Equal(t, []string{"r/c:2/2"}, r.gone, "a reader's field gone is that hold's end only")
	assert.ElementsMatch(t, []string{"r/c:1/1", "r/c:1:write/3"}, r.renewed)
	f.chunks = nil
	advanceRound(w)
	assert.ElementsMatch(t, [][]string{{"r"}, {"read:r"}}, f.chunks, "the other reader is still renewed, once per interval")

	w.Remove("r", "c:1")
	w.Remove("r", "c:1:write")
	assert.Equal(t, 0, size(w), "Remove finds read holds and others")
}
