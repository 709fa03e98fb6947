package rlock

import (
	"context"
	"errors"
	"slices"
	"sync"
	"time"
)

// sweep tries each member of idx once, at once, with lease mlease, and returns the members
// acquired, sorted, and the errors of the others. Each try runs the acquire script on a
// goroutine of its member's Client, bounded by ReleaseTimeout but not by ctx.
//
// The sweep stops waiting:
//   - once every try is in;
//   - once need of them are acquired, or, when waitable (members held by others will be
//     waited for), need are acquired or held by others and no more than tolerate (the
//     failures the group can still afford) are still running, and those still running had
//     as long again as the others took (a stopped server must not hold up a RedLock; a
//     running one gets its turn too);
//   - once so many failed for errors that need cannot be reached, or, in a RedLock's sweep
//     that is not waitable, so few are acquired or still running that need cannot be
//     reached;
//   - at deadline plus memberGrace (when not zero; a single attempt's deadline is its
//     start);
//   - when ctx ends.
//
// A try still running then is abandoned, and gives back the hold it takes. An abandoned
// member counts as held by another owner (ErrLocked) when need was reached or could no
// longer be, fails with errNoReply when the time ran out first, and with ctx's error when
// ctx ended.
func (g *group) sweep(ctx context.Context, idx []int, mlease time.Duration, deadline time.Time, need, tolerate int, waitable bool) (acquired []int, failed map[int]error) {
	if len(idx) == 0 {
		return nil, map[int]error{}
	}
	t := &tally{g: g, ctx: ctx, idx: idx, need: min(need, len(idx)), tolerate: tolerate, waitable: waitable,
		settled: make([]bool, len(idx)), left: len(idx), acquired: make([]int, 0, len(idx)),
		failed: make(map[int]error, len(idx)), wake: make(chan struct{}, 1), start: time.Now()}
	o, _ := OwnerFrom(ctx)
	for k, i := range idx {
		l := g.members[i]
		if !l.c.goBackground(func() { t.try(k, l, o, mlease) }) {
			t.file(k, ErrClosed)
		}
	}
	var stop <-chan time.Time
	if !deadline.IsZero() {
		timer := time.NewTimer(time.Until(deadline.Add(memberGrace)))
		defer timer.Stop()
		stop = timer.C
	}
	for !t.settle() {
		select {
		case <-t.wake:
		case <-stop:
			t.abandonAll(errNoReply)
		case <-ctx.Done():
			t.abandonAll(ctx.Err())
		}
	}
	slices.Sort(t.acquired)
	return t.acquired, t.failed
}

// tally is one sweep's account of its tries, kept under mu by the tries' goroutines, which
// file their outcomes, and by the sweep's caller. The caller is woken only when it has
// something to do (due): every try is in, the outcome is known without the tries still
// running, or the stragglers' time is up. So a sweep whose tries all succeed wakes its
// caller once, not once per member.
type tally struct {
	g              *group
	ctx            context.Context
	idx            []int
	need, tolerate int
	waitable       bool
	start          time.Time
	wake           chan struct{} // a due state since the caller last settled; buffered, 1

	mu           sync.Mutex
	settled      []bool // by position in idx: the try's outcome is filed, or it was abandoned
	left         int    // the tries still awaited
	errs, locked int    // tries filed that failed, and of those, held by another owner
	acquired     []int
	failed       map[int]error
	straggle     *time.Timer // the stragglers' time, once enough are in
	straggled    bool        // that time is up
}

// try runs the k-th try, on member l for owner o, and files its outcome. A try abandoned
// meanwhile gives back the hold it took.
func (t *tally) try(k int, l *Lock, o Owner, mlease time.Duration) {
	var rctx context.Context = detach(t.ctx, l.c.opts.ReleaseTimeout)
	var run *opRun
	if l.c.obs.on() {
		rctx, run = l.c.obs.begin(rctx, l.acquireOp(t.ctx, "TryLock", bounded(0), mlease))
	}
	run.attempt()
	a, err := l.tryWith(rctx, l.fieldOf(o), mlease, bounded(0), l.execAcquire)
	if err == nil && !a.acquired {
		err = ErrLocked
	}
	if run != nil {
		run.token = a.token
	}
	run.end(t.ctx, err)
	if !t.file(k, err) && err == nil {
		uerr := l.unlock(rctx)
		l.c.obs.log.Debug("rlock: gave back a group member acquired after the group stopped waiting", "lock", l.name, "error", uerr)
	}
}

// file records the outcome err of the k-th try and wakes the caller when that makes a due
// state. It returns false when the try was abandoned before: the outcome is not counted.
func (t *tally) file(k int, err error) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.settled[k] {
		return false
	}
	t.settled[k] = true
	t.left--
	i := t.idx[k]
	t.acquired, t.failed = t.g.sort(t.ctx, i, err, t.acquired, t.failed)
	switch {
	case err == nil:
	case errors.Is(t.failed[i], ErrLocked):
		t.locked++
	default:
		t.errs++
	}
	if t.straggle == nil && t.left > 0 && t.enough() {
		t.straggle = time.AfterFunc(max(time.Since(t.start), stragglerMin), t.straggleUp)
	}
	if t.due() {
		t.signal()
	}
	return true
}

// straggleUp marks the stragglers' time up and wakes the caller.
func (t *tally) straggleUp() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.straggled = true
	t.signal()
}

// signal wakes the caller, or leaves a wake-up it has not taken yet.
func (t *tally) signal() {
	select {
	case t.wake <- struct{}{}:
	default:
	}
}

// enough reports whether the group can do without the tries still running: need acquired,
// or, when members held by others will be waited for, acquired or held by others, with no
// more running than the group can still lose.
func (t *tally) enough() bool {
	if len(t.acquired) >= t.need {
		return true
	}
	return t.waitable && t.left <= t.tolerate && len(t.acquired)+t.locked >= t.need
}

// hopeless reports whether need can no longer be reached, whatever the tries still running
// do: too many failed for errors, or, in a RedLock's sweep that is not waitable, too few are
// acquired or still running. (A MultiLock's first sweep waits for every try, so that none
// acquires behind its back after it moved on.)
func (t *tally) hopeless() bool {
	return t.errs > len(t.idx)-t.need || (t.g.redlock && !t.waitable && len(t.acquired)+t.left < t.need)
}

// due reports whether the caller has something to do: every try is in, the outcome is known
// without the tries still running, or the stragglers' time is up.
func (t *tally) due() bool {
	return t.left == 0 || t.hopeless() || t.straggled
}

// settle acts on a due state, abandoning the tries still running when their outcome is no
// longer needed, and reports whether the sweep is over.
func (t *tally) settle() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	switch {
	case t.left == 0:
	case t.hopeless():
		t.abandon(ErrLocked)
	case t.straggled && len(t.acquired) >= t.need:
		t.abandon(ErrLocked)
	case t.straggled:
		t.abandon(errNoReply)
	}
	if t.left == 0 && t.straggle != nil {
		t.straggle.Stop()
	}
	return t.left == 0
}

// abandonAll abandons the tries still running with cause.
func (t *tally) abandonAll(cause error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.abandon(cause)
}

// abandon files cause for every try still running; their outcomes are no longer counted.
// t.mu is held.
func (t *tally) abandon(cause error) {
	for k, settled := range t.settled {
		if !settled {
			t.settled[k] = true
			t.left--
			t.failed[t.idx[k]] = cause
		}
	}
}
