package rlock

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/goredisson/goredisson/renewal"
)

// driftMargin is the fixed part of the safety margin taken off every lease (see safeUntil).
const driftMargin = 10 * time.Millisecond

// safeUntil is the last moment a hold whose lease was set by a request sent at sent is
// known to be safe: the server cannot have expired the key before sent + lease, as measured
// by the server's clock; the margin (1% of the lease plus driftMargin) covers the drift
// between the two clocks and the delay of the timer that acts on it.
func safeUntil(sent time.Time, lease time.Duration) time.Time {
	return sent.Add(lease - lease/100 - driftMargin)
}

// holds is a Client's table of holds: every (lock name, holder field) that an owner of this
// client holds. It is the one place that knows a hold's count, lease kind, safe-until time,
// start, long-hold warning and Held contexts, and finish is the one path by which a hold ends,
// whatever the cause. Lock types record their acquisitions and releases here; the watchdog
// wheel renews what this table gives it and reports back.
type holds struct {
	wheel *renewal.Wheel
	obs   *observer
	lease time.Duration // the watchdog lease

	mu     sync.Mutex
	byName map[string]*hold // name → its holds, linked by hold.next (rarely more than one)
	free   []*hold          // ended holds to reuse, with their stopped expiry timers
	n      int
	lastID uint64
	closed bool
}

// hold is one owner's hold of one lock through this client.
type hold struct {
	name, field string
	next        *hold  // the next hold of the same name
	id          uint64 // distinguishes this hold from earlier and later ones of the same field
	count       int    // acquisitions not yet released
	token       int64  // fenced locks: the token of the latest acquisition
	watchdog    bool   // renewed by the wheel
	start       time.Time
	safeUntil   time.Time
	expiry      *time.Timer // fires at safeUntil; kept when the hold is reused
	warn        *time.Timer // long-hold warning, when Options.HoldWarning is set
	watches     []*watch
	ended       []*watch        // the watches when the hold ended, cancelled outside hs.mu
	ctx         context.Context // with an Observer: the first acquisition's caller's ctx
}

// watch is one context handed out by Lock.Held.
type watch struct{ cancel context.CancelCauseFunc }

func newHolds(wheel *renewal.Wheel, lease time.Duration, obs *observer) *holds {
	return &holds{wheel: wheel, lease: lease, obs: obs, byName: make(map[string]*hold)}
}

// acquired records an acquisition by field of name, made by a request sent at sent that set
// the key's TTL to lease; watchdog tells whether the watchdog renews that lease. The first
// acquisition starts the hold. Every acquisition moves safe-until to sent + lease (less the
// margin), earlier or later: the server's TTL is now that lease. Once any acquisition of a
// hold used the watchdog, the wheel renews the hold until it ends. token is the fencing
// token the acquisition was issued (zero for the lock types without tokens).
//
// read marks a read hold of a read-write lock: the wheel also renews its timeout keys, and,
// while no acquisition of it used the watchdog, a re-entry only ever moves safe-until
// earlier, since each acquisition keeps a timeout key with its own lease and a release may
// leave the shortest of them.
//
// ctx is the acquisition's: with an Observer, the hold keeps its caller's for HoldEnded.
func (hs *holds) acquired(ctx context.Context, name, field string, sent time.Time, lease time.Duration, watchdog bool, token int64, read bool) {
	hs.mu.Lock()
	defer hs.mu.Unlock()
	if hs.closed {
		return
	}
	h := hs.get(name, field)
	if h == nil {
		hs.lastID++
		h = hs.newHoldLocked()
		h.name, h.field, h.next, h.id, h.start = name, field, hs.byName[name], hs.lastID, time.Now()
		hs.byName[name] = h
		hs.n++
		h.warn = hs.obs.warnAfter(name, field)
		if hs.obs.on() {
			h.ctx = holdCtx(ctx)
		}
	}
	h.count++
	h.token = token
	if watchdog && !h.watchdog {
		h.watchdog = true
		if read {
			hs.wheel.AddRead(name, field, h.id)
		} else {
			hs.wheel.Add(name, field, h.id)
		}
	}
	t := safeUntil(sent, lease)
	if read && !h.watchdog && h.count > 1 && h.safeUntil.Before(t) {
		t = h.safeUntil
	}
	hs.setSafeUntilLocked(h, t)
}

// maxFree bounds the ended holds kept for reuse.
const maxFree = 128

// newHoldLocked returns an empty hold, an ended one when there is one (the steady state of
// a lock taken and released allocates nothing), with a stopped expiry timer. Called with
// hs.mu held.
func (hs *holds) newHoldLocked() *hold {
	if n := len(hs.free); n > 0 {
		h := hs.free[n-1]
		hs.free = hs.free[:n-1]
		*h = hold{expiry: h.expiry}
		return h
	}
	h := &hold{}
	h.expiry = time.AfterFunc(time.Hour, func() { hs.expire(h) })
	h.expiry.Stop()
	return h
}

// reuse keeps h, which has ended and been finished, for a later hold.
func (hs *holds) reuse(h *hold) {
	hs.mu.Lock()
	defer hs.mu.Unlock()
	if len(hs.free) < maxFree {
		hs.free = append(hs.free, h)
	}
}

// get returns field's hold of name, or nil. Called with hs.mu held.
func (hs *holds) get(name, field string) *hold {
	for h := hs.byName[name]; h != nil; h = h.next {
		if h.field == field {
			return h
		}
	}
	return nil
}

// setSafeUntilLocked moves h's safe-until time and its timer. Called with hs.mu held.
func (hs *holds) setSafeUntilLocked(h *hold, t time.Time) {
	h.safeUntil = t
	h.expiry.Reset(time.Until(t))
}

// renewed records a renewal of hold id, sent at sent, that extended its lease to the
// watchdog lease. It only ever moves safe-until later.
func (hs *holds) renewed(name, field string, id uint64, sent time.Time) {
	hs.mu.Lock()
	defer hs.mu.Unlock()
	if h := hs.get(name, field); h != nil && h.id == id {
		if t := safeUntil(sent, hs.lease); t.After(h.safeUntil) {
			hs.setSafeUntilLocked(h, t)
		}
	}
}

// expire ends h, when it is in the table, once its safe-until time has passed; the timer
// of a hold whose safe-until moved later just fires again then. A late run of the timer,
// after h ended and was reused, acts on the hold h now is, by the same rule.
func (hs *holds) expire(h *hold) {
	hs.mu.Lock()
	if hs.get(h.name, h.field) != h {
		hs.mu.Unlock()
		return
	}
	if left := time.Until(h.safeUntil); left > 0 {
		h.expiry.Reset(left)
		hs.mu.Unlock()
		return
	}
	hs.removeLocked(h)
	hs.mu.Unlock()
	hs.finish(h, lost(ErrLeaseExpired))
}

// gone ends hold id, whose field a renewal found missing from the lock.
func (hs *holds) gone(name, field string, id uint64) {
	hs.mu.Lock()
	h := hs.get(name, field)
	if h == nil || h.id != id {
		hs.mu.Unlock()
		return
	}
	hs.removeLocked(h)
	hs.mu.Unlock()
	hs.finish(h, lost(ErrRemoved))
}

// unlocking records that one acquisition of field on name is being released, before the
// release request is sent: the final one stops the hold's renewal first, so that a released
// lock is never renewed again. It reports whether the hold is renewed by the watchdog (a
// partial release then resets the watchdog lease), and whether this was the hold's last
// acquisition (false when the table has no such hold), and the hold's id, for unlocked.
func (hs *holds) unlocking(name, field string) (watchdog, last bool, id uint64) {
	hs.mu.Lock()
	defer hs.mu.Unlock()
	h := hs.get(name, field)
	if h == nil {
		return false, false, 0
	}
	h.count--
	watchdog = h.watchdog
	if h.count <= 0 && h.watchdog {
		h.watchdog = false
		hs.wheel.Remove(name, field)
	}
	return watchdog, h.count <= 0, h.id
}

// unlocked ends hold id of field on name with cause once a release found the hold over (the
// last acquisition released, or the field gone), unless an acquisition by the same owner
// was recorded after unlocking counted the release: that one re-created the hold (its
// script ran after the release's), which then goes on, renewed as it asked.
func (hs *holds) unlocked(name, field string, id uint64, cause error) {
	hs.mu.Lock()
	h := hs.get(name, field)
	if h == nil || h.id != id || h.count > 0 {
		hs.mu.Unlock()
		return
	}
	hs.removeLocked(h)
	hs.mu.Unlock()
	hs.finish(h, cause)
}

// leaseReset records a partial release, sent at sent, that set the key's TTL to lease.
func (hs *holds) leaseReset(name, field string, sent time.Time, lease time.Duration) {
	hs.mu.Lock()
	defer hs.mu.Unlock()
	if h := hs.get(name, field); h != nil {
		hs.setSafeUntilLocked(h, safeUntil(sent, lease))
	}
}

// endName ends every hold of name with cause.
func (hs *holds) endName(name string, cause error) {
	hs.mu.Lock()
	var ended []*hold
	for h := hs.byName[name]; h != nil; h = h.next {
		ended = append(ended, h)
	}
	hs.endLocked(ended, cause)
}

// close ends every hold with cause and records no hold after it.
func (hs *holds) close(cause error) {
	hs.mu.Lock()
	hs.closed = true
	var ended []*hold
	for _, first := range hs.byName {
		for h := first; h != nil; h = h.next {
			ended = append(ended, h)
		}
	}
	hs.endLocked(ended, cause)
}

// endLocked takes the ended holds out of the table, releases hs.mu (which the caller holds),
// and then finishes each of them with cause.
func (hs *holds) endLocked(ended []*hold, cause error) {
	for _, h := range ended {
		hs.removeLocked(h)
	}
	hs.mu.Unlock()
	for _, h := range ended {
		hs.finish(h, cause)
	}
}

// removeLocked takes h out of the table and stops its renewal and timers. Called with
// hs.mu held.
func (hs *holds) removeLocked(h *hold) {
	switch first := hs.byName[h.name]; {
	case first == h && h.next == nil:
		delete(hs.byName, h.name)
	case first == h:
		hs.byName[h.name] = h.next
	default:
		for p := first; p != nil; p = p.next {
			if p.next == h {
				p.next = h.next
				break
			}
		}
	}
	h.next = nil
	hs.n--
	if h.watchdog {
		hs.wheel.Remove(h.name, h.field)
	}
	h.expiry.Stop()
	if h.warn != nil {
		h.warn.Stop()
	}
	h.ended, h.watches = h.watches, nil
}

// finish cancels h's Held contexts with cause and records the end, outside hs.mu; h is
// then reused.
func (hs *holds) finish(h *hold, cause error) {
	for _, w := range h.ended {
		w.cancel(cause)
	}
	hs.obs.holdEnded(h, cause)
	hs.reuse(h)
}

// watch returns a context derived from parent that is cancelled with the cause of the end of
// field's hold on name, the function that stops watching, and the token of the hold's latest
// acquisition. It reports false when this client has no such hold.
func (hs *holds) watch(name, field string, parent context.Context) (context.Context, context.CancelFunc, int64, bool) {
	hs.mu.Lock()
	defer hs.mu.Unlock()
	h := hs.get(name, field)
	if h == nil {
		return nil, nil, 0, false
	}
	ctx, cancel := context.WithCancelCause(parent)
	w := &watch{cancel: cancel}
	h.watches = append(h.watches, w)
	id := h.id // h may be reused once it ended: stop finds it by name, field and id
	return ctx, func() {
		hs.mu.Lock()
		if h := hs.get(name, field); h != nil && h.id == id {
			if i := slices.Index(h.watches, w); i >= 0 {
				h.watches = slices.Delete(h.watches, i, i+1)
			}
		}
		hs.mu.Unlock()
		cancel(context.Canceled)
	}, h.token, true
}

// heldByOther reports whether an owner of this client other than field holds name.
func (hs *holds) heldByOther(name, field string) bool {
	hs.mu.Lock()
	defer hs.mu.Unlock()
	for h := hs.byName[name]; h != nil; h = h.next {
		if h.field != field {
			return true
		}
	}
	return false
}

// count returns the number of holds.
func (hs *holds) count() int {
	hs.mu.Lock()
	defer hs.mu.Unlock()
	return hs.n
}

// has reports whether field holds name through this client.
func (hs *holds) has(name, field string) bool {
	hs.mu.Lock()
	defer hs.mu.Unlock()
	return hs.get(name, field) != nil
}

// safeUntilOf returns the safe-until time of field's hold on name, and false when there is
// no such hold.
func (hs *holds) safeUntilOf(name, field string) (time.Time, bool) {
	hs.mu.Lock()
	defer hs.mu.Unlock()
	if h := hs.get(name, field); h != nil {
		return h.safeUntil, true
	}
	return time.Time{}, false
}
