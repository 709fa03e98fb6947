package renewal

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/goredisson/goredisson/internal/keys"
)

// Wheel renews the leases it is given. It is safe for concurrent use; create it with New
// and stop it with Close.
//
// The wheel keeps no hold counts and decides no losses: its caller adds a hold when the
// hold's lease starts being renewed and removes it when renewal must stop, and the wheel
// reports every result (renewed, field gone, call failed) through Options. A hold is a lock
// name and a holder field, tagged with the caller's id so that a result sent for an earlier
// hold of the same field is never reported for a later one.
type Wheel struct {
	opts  Options
	renew renewFunc
	tick  time.Duration
	n     int64 // buckets, and ticks per renewal interval

	epoch time.Time
	clock func() int64 // the current tick; called with mu held

	mu      sync.Mutex
	entries map[entryKey]*entry // with no holds: removed, kept until its due tick (drop)
	buckets [][]*entry
	now     int64 // the last tick processed
	closed  bool
	idle    bool // the goroutine waits for a kick, with no timer armed

	kick   chan struct{}
	ctx    context.Context
	cancel context.CancelFunc
	done   chan struct{}

	calls, renewed, failed atomic.Uint64
}

// entry is one lock name with the holds of it that are renewed, of one kind. One renewal of
// a lock's name extends the key's TTL for every holder, so each call carries the first hold
// only. A read hold of a read-write lock also has timeout keys of its own to renew, so each
// call carries every read hold of the entry.
type entry struct {
	entryKey
	holds     []hold
	one       [1]hold // holds' first array: a name is rarely renewed for more than one field
	due       int64   // tick at which the next renewal is due
	scheduled bool
}

// entryKey names an entry: a lock name and whether its holds are read holds.
type entryKey struct {
	name string
	read bool
}

// hold is one renewed (name, field) pair.
type hold struct {
	field string
	id    uint64
}

// item is one lock of a renewal call, with the hold it was sent for.
type item struct {
	e *entry
	hold
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
}

func newWheel(opts Options, renew renewFunc) *Wheel {
	ctx, cancel := context.WithCancel(context.Background())
	w := &Wheel{
		opts:    opts,
		renew:   renew,
		tick:    max(opts.Lease/3/time.Duration(opts.Buckets), time.Millisecond),
		n:       int64(opts.Buckets),
		epoch:   time.Now(),
		entries: make(map[entryKey]*entry),
		buckets: make([][]*entry, opts.Buckets),
		kick:    make(chan struct{}, 1),
		ctx:     ctx,
		cancel:  cancel,
		done:    make(chan struct{}),
	}
	w.clock = func() int64 { return int64(time.Since(w.epoch) / w.tick) }
	return w
}

// Add starts renewing the hold of lock name by field, tagged id, whose lease its caller has
// just set: the first renewal of a name is due at most one interval later (one interval,
// unless the name's entry is still in the wheel, for another hold of it or for one removed
// less than an interval ago: the name keeps that entry's tick). Adding a field that is
// already renewed replaces its id. Add after Close does nothing.
func (w *Wheel) Add(name, field string, id uint64) { w.add(entryKey{name: name}, field, id) }

// AddRead is Add for a read hold of a read-write lock: each renewal also extends the
// reader's timeout keys, "{name}:<field>:rwlock_timeout:1…count" (lua.RenewRead), and every
// read hold of the name is renewed, not only the first.
func (w *Wheel) AddRead(name, field string, id uint64) {
	w.add(entryKey{name: name, read: true}, field, id)
}

func (w *Wheel) add(key entryKey, field string, id uint64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return
	}
	e := w.entries[key]
	if e == nil {
		e = &entry{entryKey: key}
		e.holds = e.one[:0]
		w.entries[key] = e
		w.schedule(e, max(w.clock(), w.now)+w.n)
		if w.idle {
			w.idle = false
			w.kick <- struct{}{} // one slot, and sent only to a waiting goroutine
		}
	}
	if i := e.find(field); i >= 0 {
		e.holds[i].id = id
		return
	}
	e.holds = append(e.holds, hold{field: field, id: id})
}

// Remove stops renewing the hold of name by field (added by Add or AddRead), before it
// returns. It does nothing when the hold is not renewed.
func (w *Wheel) Remove(name, field string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, read := range []bool{false, true} {
		if e := w.entries[entryKey{name, read}]; e != nil {
			if i := e.find(field); i >= 0 {
				w.drop(e, i)
			}
		}
	}
}

// drop removes the i-th hold of e. An entry left with no holds stays in the table, and in
// its bucket, until its due tick (collect), so that a name released and taken again before
// then (the common pattern of a lock) costs no new entry, no map insertion and no bucket
// slot. Called with w.mu held.
func (w *Wheel) drop(e *entry, i int) {
	e.holds = slices.Delete(e.holds, i, i+1)
}

// Stats returns the wheel's counters.
func (w *Wheel) Stats() Stats {
	return Stats{Calls: w.calls.Load(), Renewed: w.renewed.Load(), Failed: w.failed.Load()}
}

// interval is the time between two renewals of one lock: a third of the lease.
func (w *Wheel) interval() time.Duration { return w.tick * time.Duration(w.n) }

// Close stops renewal of every lock and returns once the wheel's goroutine has stopped. The
// locks then expire with their lease. Close is idempotent.
func (w *Wheel) Close() {
	w.mu.Lock()
	w.closed = true
	w.entries = make(map[entryKey]*entry)
	w.mu.Unlock()
	w.cancel()
	<-w.done
}

func (e *entry) find(field string) int {
	for i := range e.holds {
		if e.holds[i].field == field {
			return i
		}
	}
	return -1
}

// schedule puts e in the bucket of tick due. Called with w.mu held.
func (w *Wheel) schedule(e *entry, due int64) {
	e.due, e.scheduled = due, true
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
// once. Results are reported after w.mu is released.
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
	ctx, cancel := context.WithTimeout(w.ctx, w.interval())
	sent := time.Now()
	results := w.renew(ctx, w.opts.Lease, chunks)
	cancel()
	w.calls.Add(uint64(len(chunks)))
	var renewed, gone []item
	due := make(map[*entry]int64) // the next renewal of each entry sent: the earliest wanted

	w.mu.Lock()
	for i, c := range chunks {
		r := results[i]
		if r.err != nil {
			w.failed.Add(1)
			w.opts.OnError(r.err, len(c))
		}
		for j, it := range c {
			e := it.e
			if w.entries[e.entryKey] != e {
				continue // every hold removed while the call was out
			}
			k := e.find(it.field)
			current := k >= 0 && e.holds[k].id == it.id
			next := now + w.n
			switch {
			case r.err != nil:
				next = now + 1
			case r.renewed[j] == 1:
				w.renewed.Add(1)
				if current {
					renewed = append(renewed, it)
				}
			default:
				if current {
					gone = append(gone, it)
					w.drop(e, k)
				}
				if !e.read {
					next = now + 1 // the next holder, if any, is checked at once
				}
			}
			if d, ok := due[e]; !ok || next < d {
				due[e] = next
			}
		}
	}
	for e, d := range due {
		if w.entries[e.entryKey] == e {
			w.schedule(e, d)
		}
	}
	w.mu.Unlock()
	for _, it := range renewed {
		w.opts.OnRenewed(it.e.name, it.field, it.id, sent)
	}
	for _, it := range gone {
		w.opts.OnGone(it.e.name, it.field, it.id)
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
		case w.entries[e.entryKey] != e || !e.scheduled || e.due%w.n != b:
		case e.due <= tick && len(e.holds) == 0: // every hold removed (drop)
			delete(w.entries, e.entryKey)
		case e.due <= tick:
			items = w.take(e, items)
		default:
			w.buckets[b] = append(w.buckets[b], e)
		}
	}
	return items
}

// take appends e's holds that its renewal call carries: every hold of a read entry, the
// first of any other.
func (w *Wheel) take(e *entry, items []item) []item {
	e.scheduled = false
	if !e.read {
		return append(items, item{e: e, hold: e.holds[0]})
	}
	for _, h := range e.holds {
		items = append(items, item{e: e, hold: h})
	}
	return items
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
			if w.entries[e.entryKey] == e && e.scheduled && e.due == now+ahead && len(e.holds) > 0 {
				items = w.take(e, items)
			}
		}
	}
	return items
}

// chunk splits items into renewal calls of at most BatchSize locks, read holds and others
// in calls of their own (they have their own script), one hash slot per call in a cluster.
func (w *Wheel) chunk(items []item) [][]item {
	group := func(it item) int {
		g := 0
		if w.opts.Cluster {
			g = int(keys.Slot(it.e.name))
		}
		if it.e.read {
			g += 1 << 16
		}
		return g
	}
	slices.SortStableFunc(items, func(a, b item) int { return group(a) - group(b) })
	var chunks [][]item
	for start := 0; start < len(items); {
		end := min(start+w.opts.BatchSize, len(items))
		for i := start + 1; i < end; i++ {
			if group(items[i]) != group(items[start]) {
				end = i
				break
			}
		}
		chunks = append(chunks, items[start:end])
		start = end
	}
	return chunks
}
