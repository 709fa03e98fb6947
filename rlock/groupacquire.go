package rlock

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/redis/rueidis"

	"github.com/goredisson/goredisson/internal/backoff"
)

// How a group (MultiLock, RedLock) is acquired: Redisson's rounds over the members in order,
// with the free members tried at once (sweep) and a member held by another owner waited for
// through its Client's waiting core (waitFor).

// errNoReply is the error of a member whose server did not answer before the wait ended.
var errNoReply = errors.New("rlock: no reply before the wait ended")

// memberGrace is how long past the wait a member's request may still be answered before it
// is abandoned (a stopped server answers nothing).
const memberGrace = 100 * time.Millisecond

// stragglerMin is the least time a sweep gives its slowest members once it could do
// without them.
const stragglerMin = 2 * time.Millisecond

// acquire acquires the group for ctx's owner within wait (unbounded: until ctx ends or
// Redis's ACL refuses a member) with lease (zero: each member's watchdog). An owner that
// holds the group already re-enters the members it holds.
func (g *group) acquire(ctx context.Context, wait waitBound, lease time.Duration) error {
	o, ok := OwnerFrom(ctx)
	if !ok {
		return ErrNoOwner
	}
	if err := g.check(); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if held := g.heldBy(o); len(held) >= g.need {
		return g.reenter(ctx, held, lease)
	}
	if wait.limited {
		return g.tryFor(ctx, wait.d, lease)
	}
	var last error
	for {
		err := g.tryFor(ctx, lockWait(len(g.members), lease), lease)
		switch {
		case err == nil:
			return nil
		case errors.Is(err, ErrClosed), hopeless(err):
			return err
		case ctx.Err() != nil:
			if last != nil && !errors.Is(last, ErrLocked) {
				return fmt.Errorf("%w (last failure: %w)", ctx.Err(), last)
			}
			return ctx.Err()
		}
		last = err
	}
}

// heldBy returns the members that owner o holds, by the members' hold registries.
func (g *group) heldBy(o Owner) []int {
	var held []int
	for i, l := range g.members {
		if l.c.holds.has(l.name, l.fieldOf(o)) {
			held = append(held, i)
		}
	}
	return held
}

// reenter acquires once more each member in held, which the owner holds: all of them, or
// none (those re-entered are given back).
func (g *group) reenter(ctx context.Context, held []int, lease time.Duration) error {
	acquired, failed := g.sweep(ctx, held, lease, time.Time{}, len(held), 0, false)
	if len(acquired) == len(held) {
		if lease > 0 {
			g.setLease(ctx, acquired, lease)
		}
		return nil
	}
	g.giveBack(ctx, acquired)
	return g.roundError(failed)
}

// tryFor is one bounded acquire, Redisson's tryLock(wait, lease): rounds until one holds the
// group or the wait has passed; a round that failed for errors (not for other owners) is
// followed by a pause, and one that failed in a way waiting cannot change (hopeless: a
// refusal by Redis's ACL, a wrong type, a script error on too many members) ends it. With an explicit lease, every member's lease is then set to it.
func (g *group) tryFor(ctx context.Context, wait, lease time.Duration) error {
	deadline := time.Now().Add(wait)
	mlease := memberLease(wait, lease)
	retry := backoff.New(10*time.Millisecond, 500*time.Millisecond)
	for {
		acquired, err := g.round(ctx, wait, deadline, mlease)
		if err == nil {
			if lease > 0 {
				g.setLease(ctx, acquired, lease)
			}
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if cerr := g.check(); cerr != nil { // a member's Client closed meanwhile
			return cerr
		}
		if wait <= 0 || !time.Now().Before(deadline) || hopeless(err) {
			return err // a failure that waiting cannot change is not retried
		}
		if !errors.Is(err, ErrLocked) {
			dctx, cancel := context.WithDeadline(ctx, deadline)
			ok := retry.Wait(dctx)
			cancel()
			if !ok {
				if ctx.Err() != nil {
					return ctx.Err()
				}
				return err
			}
		}
	}
}

// round is one pass over the members in order, Redisson's acquisition order: members are
// acquired in order, a member held by another owner is waited for (through its Client's
// pub/sub) for the member wait before the next is tried, and the round fails once more
// members failed than the rule allows. A MultiLock's round is multiRound. In a RedLock's,
// members that are free are not tried one by one: the members from the current one on are
// tried at once, a single attempt each; those acquired
// before the first one held by another owner are kept, and those after it are given back,
// so that the group waits for its members in order, as Redisson's does, and two groups
// never hold each other's later members while waiting. A failed round gives back what it
// acquired. It returns the members acquired (at least need) or the round's error.
func (g *group) round(ctx context.Context, wait time.Duration, deadline time.Time, mlease time.Duration) ([]int, error) {
	if !g.redlock {
		return g.multiRound(ctx, wait, deadline, mlease)
	}
	n := len(g.members)
	var acquired []int
	failed := map[int]error{}
	mwait := g.memberWait(wait)
	for next := 0; ; {
		var rest []int
		for i := next; i < n; i++ {
			if _, f := failed[i]; !f {
				rest = append(rest, i)
			}
		}
		got, miss := g.sweep(ctx, rest, mlease, deadline, g.need-len(acquired), n-g.need-len(failed), wait > 0)
		acquired = append(acquired, got...)
		first := -1 // the first member held by another owner
		for _, i := range rest {
			err, missed := miss[i]
			switch {
			case !missed:
			case errors.Is(err, ErrLocked):
				if first < 0 {
					first = i
				}
			default:
				failed[i] = err
			}
		}
		if len(acquired) >= g.need {
			return acquired, nil
		}
		if len(failed) > n-g.need || first < 0 || wait <= 0 {
			g.giveBack(ctx, acquired)
			return nil, g.roundError(mergeErrs(failed, miss))
		}
		acquired = g.keepBefore(ctx, acquired, first)
		left := time.Until(deadline)
		if left <= 0 {
			g.giveBack(ctx, acquired)
			return nil, g.roundError(map[int]error{first: ErrLocked})
		}
		if err := g.waitFor(ctx, first, min(mwait, left), mlease, deadline); err == nil {
			acquired = append(acquired, first)
		} else {
			failed[first] = err
			if len(failed) > n-g.need {
				g.giveBack(ctx, acquired)
				return nil, g.roundError(failed)
			}
		}
		next = first + 1
	}
}

// multiRound is round for a MultiLock, which needs every member. With a wait, every member
// is tried at once first, so that a free group costs one round trip; the members before the
// first one that missed are kept, the others given back. From then on (and from the start
// with no wait) the lead member (the first not yet held) is acquired alone, waiting for it
// with the rest of the wait, and only then are the members after it tried at once. An owner
// only ever keeps the members before its first miss, so ten owners trying the group at once
// meet on the first member, and one of them gets the group, as with Redisson's one-by-one
// loop; had each kept whatever it got, each could hold one member and none the group. A
// single attempt each (no wait) starts with the lead alone: of ten such owners at once,
// exactly one then wins, as with Redisson's.
func (g *group) multiRound(ctx context.Context, wait time.Duration, deadline time.Time, mlease time.Duration) ([]int, error) {
	n := len(g.members)
	dl := deadline
	var acquired []int
	lead := 0
	if wait > 0 {
		all := g.all()
		got, miss := g.sweep(ctx, all, mlease, dl, n, 0, false)
		if lead = firstMissed(all, miss); lead < 0 {
			return got, nil
		}
		acquired = g.keepBefore(ctx, got, lead)
		if err := miss[lead]; !errors.Is(err, ErrLocked) {
			g.giveBack(ctx, acquired)
			return nil, g.roundError(map[int]error{lead: err})
		}
	}
	for {
		var w time.Duration
		if wait > 0 {
			if w = time.Until(deadline); w <= 0 {
				g.giveBack(ctx, acquired)
				return nil, ErrLocked
			}
		}
		var err error
		if wait > 0 {
			err = g.waitFor(ctx, lead, w, mlease, dl)
		} else {
			err = g.tryOnce(ctx, lead, mlease, dl)
		}
		if err != nil {
			g.giveBack(ctx, acquired)
			return nil, g.roundError(map[int]error{lead: err})
		}
		acquired = append(acquired, lead)
		var rest []int
		for i := lead + 1; i < n; i++ {
			rest = append(rest, i)
		}
		got, miss := g.sweep(ctx, rest, mlease, dl, len(rest), 0, false)
		first := firstMissed(rest, miss)
		if first < 0 {
			return append(acquired, got...), nil
		}
		acquired = append(acquired, g.keepBefore(ctx, got, first)...)
		if err := miss[first]; !errors.Is(err, ErrLocked) {
			g.giveBack(ctx, acquired)
			return nil, g.roundError(map[int]error{first: err})
		}
		lead = first
	}
}

// firstMissed returns the first member of idx that miss has, -1 when none.
func firstMissed(idx []int, miss map[int]error) int {
	for _, i := range idx {
		if _, missed := miss[i]; missed {
			return i
		}
	}
	return -1
}

// keepBefore returns the members of idx before first, and gives back those after it: a group
// never holds a later member while it waits for an earlier one.
func (g *group) keepBefore(ctx context.Context, idx []int, first int) []int {
	var keep, back []int
	for _, i := range idx {
		if i < first {
			keep = append(keep, i)
		} else {
			back = append(back, i)
		}
	}
	g.giveBack(ctx, back)
	return keep
}

// mergeErrs returns the errors of failed and miss together.
func mergeErrs(failed, miss map[int]error) map[int]error {
	all := make(map[int]error, len(failed)+len(miss))
	for i, err := range miss {
		all[i] = err
	}
	for i, err := range failed {
		all[i] = err
	}
	return all
}

// waitFor acquires member i, waiting at most wait for another owner (through its Client's
// pub/sub), with lease mlease, the request bounded at deadline plus memberGrace when
// deadline is not zero (a stopped server answers nothing). It returns nil when acquired,
// or the member's error as sort files it.
func (g *group) waitFor(ctx context.Context, i int, wait time.Duration, mlease time.Duration, deadline time.Time) error {
	actx := ctx
	if !deadline.IsZero() {
		var cancel context.CancelFunc
		actx, cancel = context.WithDeadline(ctx, deadline.Add(memberGrace))
		defer cancel()
	}
	_, err := g.members[i].acquire(actx, "TryLock", bounded(wait), mlease)
	_, failed := g.sort(ctx, i, err, nil, map[int]error{})
	return failed[i]
}

// tryOnce is a single attempt at member i (no wait), abandoned memberGrace after deadline
// as a sweep's tries are, so that a stopped server holds it up no longer than a RedLock's
// single attempt (a try that acquires after that gives its hold back). It returns nil when
// acquired, or the member's error as sort files it.
func (g *group) tryOnce(ctx context.Context, i int, mlease time.Duration, deadline time.Time) error {
	_, failed := g.sweep(ctx, []int{i}, mlease, deadline, 1, 0, false)
	return failed[i]
}

// sort files member i's outcome err under acquired or failed. The member's own cancellation
// (not ctx's) counts as ErrLocked, its deadline as errNoReply. A member whose reply was lost
// to the connection has already released what its request may have taken (Lock.forget;
// Redisson unlocks a member whose reply timed out).
func (g *group) sort(ctx context.Context, i int, err error, acquired []int, failed map[int]error) ([]int, map[int]error) {
	switch {
	case err == nil:
		return append(acquired, i), failed
	case ctx.Err() == nil && errors.Is(err, context.Canceled):
		err = ErrLocked
	case ctx.Err() == nil && errors.Is(err, context.DeadlineExceeded):
		err = errNoReply
	}
	failed[i] = err
	return acquired, failed
}

// roundError is the error of a round that failed with these members' errors: ErrLocked
// when every one was held by another owner, or in a RedLock when the others alone would
// have left a majority (other owners made the difference); otherwise, in a RedLock, ErrNoQuorum with the
// members' errors, and in a MultiLock the first member's error, naming the member.
func (g *group) roundError(failed map[int]error) error {
	idx := make([]int, 0, len(failed))
	for i, err := range failed {
		if !errors.Is(err, ErrLocked) {
			idx = append(idx, i)
		}
	}
	if len(idx) == 0 || (g.redlock && len(idx) <= len(g.members)-g.need) {
		return ErrLocked
	}
	slices.Sort(idx)
	finals := 0
	for _, i := range idx {
		if final(failed[i]) {
			finals++
		}
	}
	var err error
	if !g.redlock {
		err = g.memberErr(idx[0], failed[idx[0]])
	} else {
		errs := []error{ErrNoQuorum}
		for _, i := range idx {
			errs = append(errs, g.memberErr(i, failed[i]))
		}
		err = joinLine(errs...)
	}
	if finals > len(g.members)-g.need {
		return &hopelessError{err}
	}
	return err
}

// final reports whether a member's attempt failed in a way that trying again cannot change:
// a refusal by Redis's ACL, a closed Client, a name whose keys cannot be used together, or
// any other error reply of Redis (a key of another type, a script error) but those of a
// server that is loading, busy, failing over or resharding, or out of memory for now.
func final(err error) bool {
	if errors.Is(err, ErrNoPermission) || errors.Is(err, ErrClosed) || errors.Is(err, ErrCrossSlot) {
		return true
	}
	var re *rueidis.RedisError
	if !errors.As(err, &re) || rueidis.IsRedisNil(re) {
		return false
	}
	msg := re.Error()
	if refusal(msg) {
		return true
	}
	for _, code := range passingReplies {
		if strings.HasPrefix(msg, code) {
			return false
		}
	}
	return true
}

// passingReplies are the codes of Redis error replies that may change by waiting.
var passingReplies = []string{"LOADING", "BUSY", "TRYAGAIN", "CLUSTERDOWN", "MASTERDOWN",
	"READONLY", "NOREPLICAS", "MOVED", "ASK", "OOM", "MISCONF", "NOSCRIPT"}

// hopelessError is a round's error when more members failed finally (final) than the group
// can do without: no later round can acquire the group, so the acquire ends with it.
type hopelessError struct{ err error }

func (e *hopelessError) Error() string { return e.err.Error() }

func (e *hopelessError) Unwrap() error { return e.err }

// hopeless reports whether err is a round's error that no later round can change.
func hopeless(err error) bool {
	var h *hopelessError
	return errors.As(err, &h)
}
