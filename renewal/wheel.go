package renewal

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/goredisson/goredisson/internal/keys"
)

// Wheel renews watchdog locks. It is safe for concurrent use; create it with New and stop it
// with Close.
type Wheel struct {
	opts  Options
	renew renewFunc
	tick  time.Duration
	n     int64 // buckets, and ticks per renewal interval

	epoch time.Time
	clock func() int64 // the current tick; called with mu held

	mu      sync.Mutex
	entries map[string]*entry
	buckets [][]*entry
	now     int64 // the last tick processed
	gen     uint64
	closed  bool
	idle    bool // the goroutine waits for a kick, with no timer armed

	kick   chan struct{}
	ctx    context.Context
	cancel context.CancelFunc
	done   chan struct{}

	calls, renewed, failed, lost atomic.Uint64
}

// entry is one lock name with this client's watchdog owners.
type entry struct {
	name   string
	owners []owner
	due    int64     // tick at which the next renewal is due; -1 while unscheduled
	lastOK time.Time // when the lease was last set by an acquire or a renewal
}

type owner struct {
	field string
	count int
	gen   uint64
}

// item is one lock of a renewal call, with the owner it was sent for.
type item struct {
	e     *entry
	field string
	gen   uint64
}

// renewFunc renews chunks of locks and returns, per chunk, the per-lock replies (1 renewed,
// 0 not held) or the chunk's error.
type renewFunc func(ctx context.Context, lease time.Duration, chunks [][]item) []chunkResult

type chunkResult struct {
	renewed []int64
	err     error
}

// Stats counts the wheel's work since it was created.
type Stats struct {
	Calls   uint64 // renewal script calls sent
	Renewed uint64 // locks whose lease a call extended
	Failed  uint64 // calls that returned an error
	Lost    uint64 // owner holds reported lost
}

func newWheel(opts Options, renew renewFunc) *Wheel {
	opts = opts.withDefaults()
	ctx, cancel := context.WithCancel(context.Background())
	w := &Wheel{
		opts:    opts,
		renew:   renew,
		tick:    max(opts.Lease/3/time.Duration(opts.Buckets), time.Millisecond),
		n:       int64(opts.Buckets),
		epoch:   time.Now(),
		entries: make(map[string]*entry),
		buckets: make([][]*entry, opts.Buckets),
		kick:    make(chan struct{}, 1),
		ctx:     ctx,
		cancel:  cancel,
		done:    make(chan struct{}),
	}
	w.clock = func() int64 { return int64(time.Since(w.epoch) / w.tick) }
	return w
}

// Add records one more watchdog hold of lock name by field, whose lease the acquire has just
// set. The first hold of a name schedules its renewal one interval later.
func (w *Wheel) Add(name, field string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return
	}
	e := w.entries[name]
	if e == nil {
		e = &entry{name: name, due: -1}
		w.entries[name] = e
		w.schedule(e, max(w.clock(), w.now)+w.n)
		if w.idle {
			w.idle = false
			w.kick <- struct{}{} // one slot, and sent only to a waiting goroutine
		}
	}
	e.lastOK = time.Now()
	if i := e.find(field); i >= 0 {
		e.owners[i].count++
		return
	}
	w.gen++
	e.owners = append(e.owners, owner{field: field, count: 1, gen: w.gen})
}

// Remove records the release of one hold of name by field; after the last one the owner is
// no longer renewed. It takes effect before it returns, and reports whether field had a
// watchdog hold on name.
func (w *Wheel) Remove(name, field string) bool {
	return w.update(name, field, func(o *owner) bool { o.count--; return o.count <= 0 })
}

// Drop removes every hold of name by field at once, before it returns.
func (w *Wheel) Drop(name, field string) {
	w.update(name, field, func(*owner) bool { return true })
}

// update applies f to the owner and removes it when f reports true. It reports whether
// the owner was registered.
func (w *Wheel) update(name, field string, f func(*owner) bool) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	e := w.entries[name]
	if e == nil {
		return false
	}
	i := e.find(field)
	if i < 0 {
		return false
	}
	if f(&e.owners[i]) {
		e.owners = slices.Delete(e.owners, i, i+1)
		if len(e.owners) == 0 {
			delete(w.entries, name)
		}
	}
	return true
}

// Count returns how many watchdog holds field has on name (0 when none).
func (w *Wheel) Count(name, field string) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	if e := w.entries[name]; e != nil {
		if i := e.find(field); i >= 0 {
			return e.owners[i].count
		}
	}
	return 0
}

// Len returns the number of lock names being renewed.
func (w *Wheel) Len() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.entries)
}

// Stats returns the wheel's counters.
func (w *Wheel) Stats() Stats {
	return Stats{Calls: w.calls.Load(), Renewed: w.renewed.Load(), Failed: w.failed.Load(), Lost: w.lost.Load()}
}

// Interval is the time between two renewals of one lock: a third of the lease.
func (w *Wheel) Interval() time.Duration { return w.tick * time.Duration(w.n) }

// Close stops renewal of every lock and returns once the wheel's goroutine has stopped. The
// locks then expire with their lease. Close is idempotent; Add after Close does nothing.
func (w *Wheel) Close() {
	w.mu.Lock()
	w.closed = true
	w.entries = make(map[string]*entry)
	w.mu.Unlock()
	w.cancel()
	<-w.done
}

func (e *entry) find(field string) int {
	for i := range e.owners {
		if e.owners[i].field == field {
			return i
		}
	}
	return -1
}

// schedule puts e in the bucket of tick due. Called with w.mu held.
func (w *Wheel) schedule(e *entry, due int64) {
	e.due = due
	b := due % w.n
	w.buckets[b] = append(w.buckets[b], e)
}

// run is the wheel's goroutine: it ticks while any lock is registered and sleeps otherwise.
// Ticks follow the wall clock from the wheel's start, so slow renewal calls delay the
// ticks they overlap but never stretch the renewal interval.
func (w *Wheel) run() {
	defer close(w.done)
	t := time.NewTimer(w.tick)
	defer t.Stop()
	for {
		select {
		case <-w.ctx.Done():
			return
		case <-t.C:
		}
		w.mu.Lock()
		target := w.clock()
		w.mu.Unlock()
		w.advanceTo(target)
		w.mu.Lock()
		w.idle = len(w.entries) == 0
		idle := w.idle
		w.mu.Unlock()
		if idle {
			select {
			case <-w.ctx.Done():
				return
			case <-w.kick:
			}
		}
		w.mu.Lock()
		next := w.epoch.Add(time.Duration(w.clock()+1) * w.tick)
		w.mu.Unlock()
		t.Reset(time.Until(next))
	}
}

// advance moves the wheel one tick; tests drive it directly.
func (w *Wheel) advance() { w.advanceTo(w.now + 1) }

// advanceTo processes every tick up to target and renews, in one pass, the locks due by
// then. After a long idle stretch only the last round of ticks is scanned: every bucket
// once.
func (w *Wheel) advanceTo(target int64) {
	w.mu.Lock()
	var items []item
	for tick := max(w.now+1, target-w.n+1); tick <= target; tick++ {
		items = w.collect(tick, items)
	}
	w.now = max(w.now, target)
	now := w.now
	items = w.fill(now, items)
	w.mu.Unlock()
	if len(items) == 0 {
		return
	}
	chunks := w.chunk(items)
	ctx, cancel := context.WithTimeout(w.ctx, w.Interval())
	sent := time.Now()
	results := w.renew(ctx, w.opts.Lease, chunks)
	cancel()
	w.calls.Add(uint64(len(chunks)))
	type loss struct{ name, field string }
	var lostNotHeld, lostExpired []loss

	w.mu.Lock()
	for i, c := range chunks {
		r := results[i]
		if r.err != nil {
			w.failed.Add(1)
			w.opts.OnError(r.err, len(c))
		}
		for j, it := range c {
			e := it.e
			if w.entries[e.name] != e {
				continue // released, or released and taken again, while the call was out
			}
			switch {
			case r.err != nil && time.Since(e.lastOK) >= w.opts.Lease:
				for _, o := range e.owners {
					lostExpired = append(lostExpired, loss{e.name, o.field})
				}
				delete(w.entries, e.name)
			case r.err != nil:
				w.schedule(e, now+1)
			case r.renewed[j] == 1:
				w.renewed.Add(1)
				e.lastOK = sent
				w.schedule(e, now+w.n)
			default:
				if k := e.find(it.field); k >= 0 && e.owners[k].gen == it.gen {
					lostNotHeld = append(lostNotHeld, loss{e.name, it.field})
					e.owners = slices.Delete(e.owners, k, k+1)
				}
				if len(e.owners) == 0 {
					delete(w.entries, e.name)
				} else {
					w.schedule(e, now+1)
				}
			}
		}
	}
	w.mu.Unlock()
	for _, l := range lostNotHeld {
		w.lost.Add(1)
		w.opts.OnLost(l.name, l.field, ErrNotHeld)
	}
	for _, l := range lostExpired {
		w.lost.Add(1)
		w.opts.OnLost(l.name, l.field, ErrLeaseExpired)
	}
}

// collect appends to items the entries due at or before tick in tick's bucket. Called with
// w.mu held.
func (w *Wheel) collect(tick int64, items []item) []item {
	b := tick % w.n
	bucket := w.buckets[b]
	w.buckets[b] = nil
	for _, e := range bucket {
		switch {
		case w.entries[e.name] != e || e.due < 0 || e.due%w.n != b:
		case e.due <= tick:
			items = w.take(e, items)
		default:
			w.buckets[b] = append(w.buckets[b], e)
		}
	}
	return items
}

func (w *Wheel) take(e *entry, items []item) []item {
	e.due = -1
	return append(items, item{e: e, field: e.owners[0].field, gen: e.owners[0].gen})
}

// fill tops the last call up to a full batch, outside a cluster, with entries due in the
// next ticks, renewing them early, so that a whole interval costs about one call per
// BatchSize locks. Called with w.mu held.
func (w *Wheel) fill(now int64, items []item) []item {
	if w.opts.Cluster || len(items) == 0 {
		return items
	}
	for ahead := int64(1); ahead < w.n && len(items)%w.opts.BatchSize != 0; ahead++ {
		for _, e := range w.buckets[(now+ahead)%w.n] {
			if len(items)%w.opts.BatchSize == 0 {
				break
			}
			if w.entries[e.name] == e && e.due == now+ahead {
				items = w.take(e, items)
			}
		}
	}
	return items
}

// chunk splits items into renewal calls of at most BatchSize locks, one hash slot per call
// in a cluster.
func (w *Wheel) chunk(items []item) [][]item {
	if w.opts.Cluster {
		slices.SortStableFunc(items, func(a, b item) int {
			return int(keys.Slot(a.e.name)) - int(keys.Slot(b.e.name))
		})
	}
	var chunks [][]item
	for start := 0; start < len(items); {
		end := min(start+w.opts.BatchSize, len(items))
		if w.opts.Cluster {
			slot := keys.Slot(items[start].e.name)
			for i := start + 1; i < end; i++ {
				if keys.Slot(items[i].e.name) != slot {
					end = i
					break
				}
			}
		}
		chunks = append(chunks, items[start:end])
		start = end
	}
	return chunks
}

// Forget stops renewing lock name for every owner, before it returns.
func (w *Wheel) Forget(name string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.entries, name)
}
