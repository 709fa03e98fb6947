package rlock

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"
)

// group is the locks of a MultiLock or a RedLock, the members, and the rule of how many of
// them make a hold: all of them (MultiLock) or a majority (RedLock). Members may come from
// different Clients (different Redis servers) or be different names on one server. A group
// keeps no state of its own: what an owner holds is in each member Client's hold registry,
// and each member is renewed by its own Client's watchdog.
type group struct {
	members []*Lock
	labels  []string // each member as "name@address", for errors and logs
	name    string   // the group in errors: "[a@127.0.0.1:6379 b@127.0.0.1:6380]"
	need    int      // members that make a hold
	redlock bool
}

// newGroup checks the members of a group made by op: at least one, none nil, none twice,
// all of one lock type and watchdog lease, names not empty, Clients not closed.
func newGroup(op string, locks []*Lock, redlock bool) (*group, error) {
	g := &group{members: slices.Clone(locks), need: len(locks), redlock: redlock}
	if redlock {
		g.need = quorum(len(locks))
	}
	seen := make(map[string]bool, len(locks))
	var err error
	for i, l := range locks {
		if l == nil {
			g.labels = append(g.labels, "<nil>")
			err = cmpOr(err, fmt.Errorf("%w: lock %d is nil", ErrNoMembers, i))
			continue
		}
		label, where := memberLabel(l)
		g.labels = append(g.labels, label)
		first := locks[0]
		switch {
		case seen[where]:
			err = cmpOr(err, fmt.Errorf("%w: %s", ErrDuplicateMember, label))
		case first != nil && (l.kind != first.kind || l.c.opts.WatchdogTimeout != first.c.opts.WatchdogTimeout):
			err = cmpOr(err, fmt.Errorf("%w: %s differs from %s", ErrMixedMembers, label, memberName(first)))
		}
		seen[where] = true
		if cerr := l.check(); cerr != nil {
			err = cmpOr(err, fmt.Errorf("lock %s: %w", label, cerr))
		}
	}
	g.name = "[" + strings.Join(g.labels, " ") + "]"
	if len(locks) == 0 {
		err = ErrNoMembers
	}
	return g, failOn(op, g.name, err)
}

// cmpOr returns the first non-nil error.
func cmpOr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

// memberName is l's label.
func memberName(l *Lock) string {
	label, _ := memberLabel(l)
	return label
}

// memberLabel returns l as "name@address" (the first of its rueidis client's nodes, "+N"
// for more), and the key that tells two members apart: the name on exactly those nodes.
func memberLabel(l *Lock) (label, where string) {
	var addrs []string
	for addr := range l.c.rc.Nodes() {
		addrs = append(addrs, addr)
	}
	sort.Strings(addrs)
	label = l.name
	switch {
	case len(addrs) == 1:
		label += "@" + addrs[0]
	case len(addrs) > 1:
		label += fmt.Sprintf("@%s+%d", addrs[0], len(addrs)-1)
	}
	return label, l.name + "@" + strings.Join(addrs, ",")
}

// quorum is the majority of n members: n/2+1.
func quorum(n int) int { return n/2 + 1 }

// memberLease is the lease each member is acquired with, Redisson's rule: zero (the
// watchdog) for a zero lease; otherwise twice the wait when there is one, so that no member
// runs out while the others are acquired (the group's lease is set on every member once
// the group is held), and the lease itself when there is no wait.
func memberLease(wait, lease time.Duration) time.Duration {
	switch {
	case lease <= 0:
		return 0
	case wait > 0:
		return 2 * wait
	}
	return lease
}

// memberWait is how long one member may be waited for, of a wait for the whole group:
// all of it in a MultiLock, and in a RedLock its share, wait/n but at least 1 ms
// (Redisson's calcLockWaitTime). Zero stays zero: one attempt per member.
func (g *group) memberWait(wait time.Duration) time.Duration {
	if !g.redlock || wait <= 0 {
		return wait
	}
	return max(wait/time.Duration(len(g.members)), time.Millisecond)
}

// validity is how long a group whose held members are safe until the times safe stays held
// by its rule at now: until the need-th latest of them, less now; zero when fewer than need
// are held or that time has passed. Each safe-until time is the request's send time plus
// the lease less the drift margin (safeUntil), so this is Redlock's "lease minus elapsed
// minus drift" for the member that decides.
func validity(safe []time.Time, need int, now time.Time) time.Duration {
	if need <= 0 || len(safe) < need {
		return 0
	}
	s := slices.Clone(safe)
	slices.SortFunc(s, func(a, b time.Time) int { return b.Compare(a) })
	return max(s[need-1].Sub(now), 0)
}

// lockWait is the wait of one round of an unbounded acquire (Redisson's lockInterruptibly):
// 1.5 s per member without a lease; with one, a random wait between half the lease and the
// lease when the lease is at most that, else between that and the lease.
func lockWait(members int, lease time.Duration) time.Duration {
	base := time.Duration(members) * 1500 * time.Millisecond
	switch {
	case lease <= 0:
		return base
	case lease <= base:
		return lease/2 + rand.N(max(lease/2, 1))
	}
	return base + rand.N(lease-base)
}

// joinLine joins errors on one line: "a; b; c", matching each of them with errors.Is.
func joinLine(errs ...error) error { return &lineErrors{errs: errs} }

type lineErrors struct{ errs []error }

func (e *lineErrors) Error() string {
	s := make([]string, len(e.errs))
	for i, err := range e.errs {
		s[i] = err.Error()
	}
	return strings.Join(s, "; ")
}

func (e *lineErrors) Unwrap() []error { return e.errs }

// memberErr is err of member i, naming it, and what its server refused when it is a
// refusal by Redis's ACL.
func (g *group) memberErr(i int, err error) error {
	l := g.members[i]
	return fmt.Errorf("lock %s: %w", g.labels[i], l.c.classify(l.needs(), err))
}

// giveBack releases one hold of ctx's owner on each member of idx, at once, and waits for
// the releases (each bounded by its Client's ReleaseTimeout).
func (g *group) giveBack(ctx context.Context, idx []int) {
	g.each(idx, func(i int) error {
		err := g.members[i].unlock(ctx)
		if err != nil {
			g.members[i].c.obs.log.Debug("rlock: giving back a group member failed", "lock", g.labels[i], "error", err)
		}
		return err
	})
}

// each runs f for every member of idx, at once, and returns their errors by position in idx.
// The last runs on the caller's goroutine, which would only wait otherwise.
func (g *group) each(idx []int, f func(i int) error) []error {
	errs := make([]error, len(idx))
	var wg sync.WaitGroup
	for k, i := range idx {
		if k == len(idx)-1 {
			errs[k] = f(i)
			break
		}
		wg.Add(1)
		run := func() {
			defer wg.Done()
			errs[k] = f(i)
		}
		if !g.members[i].c.goBackground(run) {
			go run() // a closed Client: f fails at once
		}
	}
	wg.Wait()
	return errs
}

// all is every member's index.
func (g *group) all() []int {
	idx := make([]int, len(g.members))
	for i := range idx {
		idx[i] = i
	}
	return idx
}

// setLease sets the lease of each acquired member to lease (PEXPIRE, Redisson's
// expireAsync), once the group is held, and moves the registry's safe-until to follow.
// A member whose PEXPIRE fails keeps the lease it was acquired with.
func (g *group) setLease(ctx context.Context, acquired []int, lease time.Duration) {
	o, _ := OwnerFrom(ctx)
	g.each(acquired, func(i int) error {
		l := g.members[i]
		sent := time.Now()
		ok, err := l.c.rc.Do(ctx, l.c.rc.B().Pexpire().Key(l.name).Milliseconds(max(lease.Milliseconds(), 1)).Build()).AsBool()
		if err == nil && ok {
			l.c.holds.leaseReset(l.name, l.fieldOf(o), sent, lease)
		}
		return err
	})
}

// unlock releases one hold of ctx's owner on every member, at once, and returns each
// member's error by index.
func (g *group) unlock(ctx context.Context) []error {
	return g.each(g.all(), func(i int) error { return g.members[i].unlock(ctx) })
}

// check runs every member's Lock.check and returns the first error, naming the member: a
// group with a member of a closed Client is closed, a RedLock too.
func (g *group) check() error {
	for i, l := range g.members {
		if err := l.check(); err != nil {
			return g.memberErr(i, err)
		}
	}
	return nil
}

// safeUntils returns the safe-until times of the members that owner o holds.
func (g *group) safeUntils(o Owner) []time.Time {
	safe := make([]time.Time, 0, len(g.members))
	for _, l := range g.members {
		if t, ok := l.c.holds.safeUntilOf(l.name, l.fieldOf(o)); ok {
			safe = append(safe, t)
		}
	}
	return safe
}

// held is the group's Held: a context derived from ctx that ends when the owner's holds no
// longer satisfy the group's rule, with the cause of the member hold whose end broke it.
func (g *group) held(ctx context.Context) (context.Context, context.CancelFunc, error) {
	o, ok := OwnerFrom(ctx)
	if !ok {
		return nil, nil, ErrNoOwner
	}
	if err := g.check(); err != nil {
		return nil, nil, err
	}
	gctx, cancel := context.WithCancelCause(ctx)
	var mu sync.Mutex
	mu.Lock() // the AfterFuncs below wait for the count to be complete
	alive := 0
	var stops []func()
	for i, l := range g.members {
		mctx, stop, _, ok := l.c.holds.watch(l.name, l.fieldOf(o), ctx)
		if !ok {
			continue
		}
		alive++
		after := context.AfterFunc(mctx, func() {
			mu.Lock()
			alive--
			broken := alive < g.need
			mu.Unlock()
			if broken {
				cause := context.Cause(mctx)
				if !errors.Is(cause, context.Canceled) {
					cause = g.memberErr(i, cause)
				}
				cancel(cause)
			}
		})
		stops = append(stops, func() { after(); stop() })
	}
	stopAll := func() {
		for _, s := range stops {
			s()
		}
		cancel(context.Canceled)
	}
	enough := alive >= g.need
	mu.Unlock()
	if !enough {
		stopAll()
		return nil, nil, ErrNotHeld
	}
	return gctx, stopAll, nil
}
