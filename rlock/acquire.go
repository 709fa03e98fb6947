package rlock

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/rueidis"

	"github.com/goredisson/goredisson/internal/keys"
	"github.com/goredisson/goredisson/lua"
	"github.com/goredisson/goredisson/pubsub"
)

// Lock acquires the lock for ctx's owner with the watchdog: the lease is the client's
// WatchdogTimeout and is renewed every third of it until the owner's final Unlock, so the
// lock lives as long as its holder does. It re-enters when the owner already holds the lock;
// on a lock from NewNonReentrantLock it returns ErrReentry instead, at once, and the hold is
// unchanged (as do LockFor, TryLock, Do and TryDo).
//
// It blocks until the lock is acquired or ctx ends; while another owner holds it, it sleeps
// until a release is published (or the holder's lease runs out) and does not poll. It
// returns nil if and only if the owner now holds the lock. When ctx ends it returns an error
// matching ctx.Err() and leaves nothing held: at once while waiting, and one round trip
// later while a script call is in flight (the call is not abandoned, so that its reply is
// known; on a connection that stalls, ReleaseTimeout bounds it); a hold the script took
// after ctx ended is given back in the background. When an attempt's reply is lost to the
// connection (the attempt may or may not have taken effect), the hold it may have taken is
// released at once, unless the owner held the lock before (a re-entry, left as the server
// has it); a hold that release misses is never renewed and ends with its lease. The first
// attempt then returns the connection error; a waiter tries again after a pause, while its
// attempts keep failing on the connection for less than 30 s, so that it rides out a
// reconnect, a restart or a failover. With replica sync on (Options.ReplicaSync), an
// acquisition counts only once a replica of the master confirmed it; when none did in any
// of its tries, it returns ErrNotReplicated and the owner holds nothing it did not hold
// before.
func (l *Lock) Lock(ctx context.Context) error {
	_, err := l.lock(ctx)
	return err
}

func (l *Lock) lock(ctx context.Context) (int64, error) {
	token, err := l.acquire(ctx, "Lock", unbounded, 0)
	return token, l.fail("Lock", err)
}

// LockFor acquires the lock like Lock, but with an explicit lease that is never renewed: the
// lock is released by the owner's Unlock or when lease runs out, whichever is first. On a
// lock the owner already holds, it sets the lease to lease, shorter or longer. It returns
// ErrInvalidLease unless lease is positive.
func (l *Lock) LockFor(ctx context.Context, lease time.Duration) error {
	_, err := l.lockFor(ctx, lease)
	return err
}

func (l *Lock) lockFor(ctx context.Context, lease time.Duration) (int64, error) {
	if lease <= 0 {
		return 0, l.fail("LockFor", ErrInvalidLease)
	}
	token, err := l.acquire(ctx, "LockFor", unbounded, lease)
	return token, l.fail("LockFor", err)
}

// TryLock acquires the lock like Lock, waiting at most wait for another owner to release it:
// zero means a single attempt. lease is the explicit lease; zero means the watchdog.
//
// It returns nil when the owner now holds the lock, ErrLocked when the wait passed with the
// lock held by another owner, an error matching ctx.Err() when ctx ended first, and
// ErrInvalidWait or ErrInvalidLease for negative values.
func (l *Lock) TryLock(ctx context.Context, wait, lease time.Duration) error {
	_, err := l.tryLock(ctx, wait, lease)
	return err
}

func (l *Lock) tryLock(ctx context.Context, wait, lease time.Duration) (int64, error) {
	if err := checkTry(wait, lease); err != nil {
		return 0, l.fail("TryLock", err)
	}
	token, err := l.acquire(ctx, "TryLock", bounded(wait), lease)
	return token, l.fail("TryLock", err)
}

func checkTry(wait, lease time.Duration) error {
	if wait < 0 {
		return ErrInvalidWait
	}
	if lease < 0 {
		return ErrInvalidLease
	}
	return nil
}

// acquire checks the call, runs the waiting core (waitFor) and reports the operation, named
// for the method called, to the Observer. A zero lease means the watchdog. It returns the
// token of the acquisition (fenced locks).
func (l *Lock) acquire(ctx context.Context, call string, wait waitBound, lease time.Duration) (int64, error) {
	field, err := l.ownerField(ctx)
	if err != nil {
		return 0, err
	}
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	if l.kind == writeLock && l.upgrade(field) {
		return 0, ErrUpgrade
	}
	if !l.c.obs.on() {
		return l.wait(ctx, field, wait, lease, nil)
	}
	octx, run := l.c.obs.begin(ctx, l.acquireOp(ctx, call, wait, lease))
	token, err := l.wait(octx, field, wait, lease, run)
	if run != nil {
		run.token = token
	}
	run.end(ctx, err)
	return token, err
}

// wait is acquire's loop, after the arguments were checked: the shared waiting core with
// the lock's channel and the reentrant lock's wake rule, the fair lock's (its waiter's own
// channel), or the spin lock's. run, when not nil, counts the attempts.
func (l *Lock) wait(ctx context.Context, field string, wait waitBound, lease time.Duration, run *opRun) (token int64, err error) {
	try := func() (attempt, error) {
		run.attempt()
		a, err := l.try(ctx, field, lease, wait)
		token = a.token
		return a, err
	}
	switch {
	case l.spin != nil:
		err = l.c.spinFor(ctx, wait, l.spin.backoff, try)
	case l.kind == fair:
		err = l.fairWait(ctx, field, wait, try)
	case l.kind == readLock:
		err = l.c.waitForClass(ctx, wait, l.channel, "read", pubsub.ReadRule, try)
	case l.kind == writeLock:
		err = l.c.waitForClass(ctx, wait, l.channel, "write", pubsub.WriteRule, try)
	default:
		err = l.c.waitFor(ctx, wait, l.channel, pubsub.LockRule, try)
	}
	return token, err
}

// try runs the acquire script. An acquisition is recorded in the hold registry (and a
// watchdog hold registered for renewal) before try returns. With replica sync, an
// acquisition that no replica confirmed has been given back and is tried again after a
// pause, replicaSyncTries tries in all; ErrNotReplicated when none was confirmed. wait is
// the acquire's bound, which a fair lock's scripts take.
func (l *Lock) try(ctx context.Context, field string, lease time.Duration, wait waitBound) (attempt, error) {
	return l.tryWith(ctx, field, lease, wait, l.evalAcquire)
}

// tryWith is try, with exec running the acquire script: evalAcquire, which gives back a hold
// taken after ctx ended, or, for a caller that does that itself, runAcquire.
func (l *Lock) tryWith(ctx context.Context, field string, lease time.Duration, wait waitBound,
	exec func(context.Context, acquisition) (rueidis.RedisResult, error)) (attempt, error) {
	a := acquisition{field: field, lease: lease}
	watchdog := lease == 0
	if watchdog {
		a.lease, a.leaseMs = l.c.opts.WatchdogTimeout, l.c.leaseMs
	} else {
		a.leaseMs = strconv.FormatInt(max(lease.Milliseconds(), 1), 10)
	}
	if l.kind == fair {
		a.once = wait.limited && wait.d == 0
		a.fairWait = l.fairWaitMs(wait)
	}
	return retryUnconfirmed(ctx, func() (attempt, error) {
		a.sent = time.Now()
		res, err := exec(ctx, a)
		if err != nil {
			return attempt{}, err
		}
		r, err := l.decode(res)
		switch {
		case uncertain(err):
			l.forget(ctx, field) // before anything else: never a hold the owner takes later
			return attempt{}, err
		case err != nil:
			return attempt{}, err
		case r.acquired:
			l.c.holds.acquired(ctx, l.name, field, a.sent, a.lease, watchdog, r.token, l.kind == readLock)
			return attempt{acquired: true, token: r.token}, nil
		case l.kind == fair && r.ttl <= 0:
			return attempt{}, nil // free, another waiter first (or no TTL): see fairWait
		case r.ttl < 0:
			return attempt{}, nil
		}
		return attempt{expires: true, ttl: millis(r.ttl)}, nil
	})
}

// reply is a decoded reply of an acquire script.
type reply struct {
	acquired bool
	ttl      int64 // not acquired: the holder's PTTL in ms, -1 when its key has no TTL
	token    int64 // fenced, acquired: the acquisition's token
}

// decode reads a reply of l's acquire script: an error reply (or a failed call) is the
// error, as is errUnconfirmed from replica sync.
func (l *Lock) decode(res rueidis.RedisResult) (reply, error) {
	if l.kind == fenced {
		v, err := res.AsIntSlice()
		switch {
		case err != nil:
			return reply{}, err
		case len(v) != 2:
			return reply{}, fmt.Errorf("rlock: unexpected reply of the fenced acquire script: %v", v)
		case v[0] == -1 && v[1] != -1:
			// Acquired, as Java reads it (the first element -1), whatever the counter held:
			// a token that is not positive is still the hold's. {-1, -1} is a holder's key
			// without a TTL.
			return reply{acquired: true, token: v[1]}, nil
		}
		return reply{ttl: v[0]}, nil
	}
	ms, err := res.AsInt64()
	switch {
	case rueidis.IsRedisNil(err):
		return reply{acquired: true}, nil
	case l.kind == nonReentrant && isReacquire(err):
		return reply{}, ErrReentry
	case err != nil:
		return reply{}, err
	}
	return reply{ttl: ms}, nil
}

// reacquireError is the error reply of the non-reentrant acquire script to a holder that
// acquires again (Redisson's text).
const reacquireError = "NON_REENTRANT_REACQUIRE"

// isReacquire reports whether err is the error reply reacquireError.
func isReacquire(err error) bool {
	e, ok := rueidis.IsRedisErr(err)
	return ok && strings.Contains(e.Error(), reacquireError)
}

// acquiredBy reports whether res is the reply of an acquisition.
func (l *Lock) acquiredBy(res rueidis.RedisResult) bool {
	r, err := l.decode(res)
	return err == nil && r.acquired
}

// acquisition is one run of the acquire script.
type acquisition struct {
	field    string
	lease    time.Duration // the TTL the script sets
	leaseMs  string        // lease as the script takes it
	sent     time.Time     // when the script was sent, at the latest
	once     bool          // fair: a single attempt (the script that never queues)
	fairWait string        // fair: the thread-wait time in ms, as the scripts take it
}

// evalAcquire runs the acquire script on the caller's goroutine. A ctx that can end does
// not cancel the request, which would lose its reply: the script is sent with ctx's values
// under a bound of ReleaseTimeout, so the call returns when the reply arrives, one round
// trip after ctx ended at most, or when that bound passes on a stalled connection. If ctx
// ended by then, it returns ctx.Err(), and a hold the script took is given back in the
// background, never recorded or renewed; a fair lock's attempt that did not take the lock
// leaves the queue in the background (lua.FairLeave), since it may have queued.
func (l *Lock) evalAcquire(ctx context.Context, a acquisition) (rueidis.RedisResult, error) {
	return detachedAcquire(l.c, ctx, lockAcquire{l, a})
}

// lockAcquire is one run of a lock's acquire script, as detachedAcquire takes it.
type lockAcquire struct {
	l *Lock
	a acquisition
}

func (r lockAcquire) run(ctx context.Context) (rueidis.RedisResult, error) {
	return r.l.runAcquire(ctx, r.a), nil
}

// took reports a hold taken, or, for a fair lock's attempt that may wait, a place in the
// queue that the attempt may have taken.
func (r lockAcquire) took(res rueidis.RedisResult, _ error) bool {
	return r.l.acquiredBy(res) || (r.l.kind == fair && !r.a.once)
}

func (r lockAcquire) undo(ctx context.Context, res rueidis.RedisResult) {
	if !r.l.acquiredBy(res) {
		r.l.leaveQueue(ctx, r.a.field, r.a.fairWait)
		return
	}
	err := r.l.giveBack(ctx, r.a)
	r.l.c.obs.log.Debug("rlock: gave back a hold taken after its caller gave up", "lock", r.l.name, "holder", r.a.field, "error", err)
}

// execAcquire is runAcquire as tryWith takes it.
func (l *Lock) execAcquire(ctx context.Context, a acquisition) (rueidis.RedisResult, error) {
	return l.runAcquire(ctx, a), nil
}

// runAcquire runs the acquire script. With replica sync it waits for the master's replicas
// on the same connection, and gives back an acquisition that none of them confirmed: the
// reply is then errUnconfirmed, or ErrNotReplicated with the error of a give-back that
// failed (that hold then ends with its lease, never renewed).
func (l *Lock) runAcquire(ctx context.Context, a acquisition) rueidis.RedisResult {
	script, ks, args := lua.Acquire, [2]string{l.name}, [3]string{a.leaseMs, a.field}
	nkeys, nargs := 1, 2
	switch l.kind {
	case fenced:
		script, ks[1], nkeys = lua.FencedAcquire, l.tokenKey, 2
	case nonReentrant:
		script, args[2], nargs = lua.NonReentrantAcquire, reacquireError, 3
	case fair:
		fscript, fks, fargs := l.fairAcquireCall(a)
		return l.runAcquireSlices(ctx, a, fscript, fks, fargs)
	case readLock:
		script, ks[1], nkeys = lua.ReadAcquire, keys.ReadTimeoutPrefix(l.name, a.field), 2
		args[2], nargs = a.field+writerSuffix, 3
	case writeLock:
		script = lua.WriteAcquire
	}
	if l.c.replicas == nil {
		return script.Exec(ctx, l.c.rc, ks[:nkeys], args[:nargs]) // on the stack
	}
	return l.runAcquireSynced(ctx, a, script, slices.Clone(ks[:nkeys]), slices.Clone(args[:nargs]))
}

// runAcquireSlices is runAcquire for a script whose KEYS and ARGV are already slices.
func (l *Lock) runAcquireSlices(ctx context.Context, a acquisition, script lua.Script, ks, args []string) rueidis.RedisResult {
	if l.c.replicas == nil {
		return script.Exec(ctx, l.c.rc, ks, args)
	}
	return l.runAcquireSynced(ctx, a, script, ks, args)
}

// runAcquireSynced is runAcquire with replica sync.
func (l *Lock) runAcquireSynced(ctx context.Context, a acquisition, script lua.Script, ks, args []string) rueidis.RedisResult {
	res, unconfirmed := l.c.replicas.exec(ctx, script, ks, args)
	if unconfirmed == nil || !l.acquiredBy(res) {
		return res // confirmed, not acquired, or failed
	}
	err := l.giveBack(ctx, a)
	l.c.obs.log.Debug("rlock: gave back an acquisition no replica confirmed", "lock", l.name, "holder", a.field,
		"cause", unconfirmed, "error", err)
	if err != nil {
		return rueidis.NewErrorResult(fmt.Errorf("%w; giving the hold back failed: %w", ErrNotReplicated, err))
	}
	return rueidis.NewErrorResult(unconfirmed)
}

// giveBack releases acquisition a, which its caller does not keep, bounded by
// ReleaseTimeout and without waiting for replicas. When the owner held the lock before (a
// re-entry), that hold stays, with the TTL a set, and the registry's safe-until follows it
// (a read hold keeps its own: its remaining timeout keys were not touched).
func (l *Lock) giveBack(ctx context.Context, a acquisition) error {
	dctx := detach(ctx, l.c.opts.ReleaseTimeout)
	ctx = dctx
	r, err := l.release(ctx, a.field, false, true, false)
	if err == nil && r == partial && l.kind != readLock {
		l.c.holds.leaseReset(l.name, a.field, a.sent, a.lease)
	}
	return err
}
