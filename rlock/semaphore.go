package rlock

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/redis/rueidis"

	"github.com/goredisson/goredisson/internal/keys"
	"github.com/goredisson/goredisson/lua"
	"github.com/goredisson/goredisson/pubsub"
)

// Semaphore is a counting semaphore shared with Java Redisson's RSemaphore of the same name:
// its available permits are the string key name, and its channel "redisson_sc:{name}"
// carries the new number of available permits after each release. A semaphore with no key
// has no permits. Permits are not owned: any caller may release permits it never acquired,
// as with Java's.
//
// Handles are cheap and safe for concurrent use. Every method returns ErrEmptyName for a
// handle with an empty name and ErrClosed once the Client is closed, and every error names
// the method and the semaphore (`rlock: Acquire "sem:1": …`). With replica sync on
// (Options.ReplicaSync) its writes wait for the master's replicas as the lock writes do:
// permits taken that no replica confirmed are given back and taken again, and an acquire
// returns ErrNotReplicated after three tries.
type Semaphore struct {
	c       *Client
	name    string
	channel string
}

// NewSemaphore returns the handle of the semaphore called name, as Java's getSemaphore(name).
// Like NewLock it never fails.
func (c *Client) NewSemaphore(name string) *Semaphore {
	return &Semaphore{c: c, name: name, channel: keys.SemaphoreChannel(name)}
}

// Name returns the semaphore's name, its Redis key.
func (s *Semaphore) Name() string { return s.name }

// TrySetPermits sets the available permits to n if the semaphore has no key, publishes n
// and reports true; otherwise it changes nothing and reports false. It returns
// ErrInvalidPermits for a negative n.
func (s *Semaphore) TrySetPermits(ctx context.Context, n int64) (bool, error) {
	if err := s.checkPermits(n, 0); err != nil {
		return false, s.fail("TrySetPermits", err)
	}
	permits := strconv.FormatInt(n, 10)
	res, _ := s.exec(ctx, lua.TrySet, []string{s.name, s.channel}, append([]string{permits, permits}, s.c.publish...))
	set, err := res.AsBool()
	return set, s.fail("TrySetPermits", err)
}

// Acquire takes n permits, waiting as long as ctx allows until n are available together.
// While too few are available it sleeps until a release is published (a message v wakes
// the v earliest waiters of this process, as in Java) and does not poll. A waiter rides out
// a reconnect, a restart or a failover: an attempt that fails on the connection is made
// again, for up to 30 s of such failures. It returns ErrInvalidPermits for n ≤ 0, and
// ctx.Err() when ctx ends first, having taken nothing.
//
// An attempt whose reply is lost to the connection (the server may have run it) may have
// taken n permits, and nothing tells them apart from the permits of other holders: as with
// Redisson, they stay taken until released by hand. ExpirableSemaphore gives such permits
// back.
func (s *Semaphore) Acquire(ctx context.Context, n int64) error {
	return s.fail("Acquire", s.acquire(ctx, n, unbounded))
}

// TryAcquire is Acquire bounded by wait: it returns nil when it took n permits, and an
// error matching ErrNoPermits (and so ErrLocked, as every Try of the package), having taken
// nothing, when n permits did not become available within wait; a wait of 0 makes a single
// attempt. It returns ErrInvalidPermits for n ≤ 0 and ErrInvalidWait for a negative wait.
func (s *Semaphore) TryAcquire(ctx context.Context, n int64, wait time.Duration) error {
	if wait < 0 {
		return s.fail("TryAcquire", fmt.Errorf("%w: %v", ErrInvalidWait, wait))
	}
	return s.fail("TryAcquire", noPermits(s.acquire(ctx, n, bounded(wait))))
}

// noPermits is err, or ErrNoPermits when err is the waiting core's ErrLocked.
func noPermits(err error) error {
	if errors.Is(err, ErrLocked) {
		return ErrNoPermits
	}
	return err
}

func (s *Semaphore) acquire(ctx context.Context, n int64, wait waitBound) error {
	if err := s.checkPermits(n, 1); err != nil {
		return err
	}
	return s.c.waitFor(ctx, wait, s.channel, pubsub.SemaphoreRule, func() (attempt, error) {
		ok, err := s.try(ctx, n)
		return attempt{acquired: ok}, err
	})
}

// try runs the acquire script once, on a context detached from ctx's cancellation
// (detachedAcquire): permits taken by a request whose caller gave up meanwhile are given back.
// With replica sync, permits taken that no replica confirmed are given back and taken again
// after a pause, replicaSyncTries tries in all; ErrNotReplicated when none was confirmed.
func (s *Semaphore) try(ctx context.Context, n int64) (bool, error) {
	r := semaphoreAcquire{s, n, []string{strconv.FormatInt(n, 10)}}
	return retryUnconfirmed(ctx, func() (bool, error) { return detachedAcquire(s.c, ctx, r) })
}

// semaphoreAcquire is one run of the semaphore's acquire script for n permits, as
// detachedAcquire takes it.
type semaphoreAcquire struct {
	s    *Semaphore
	n    int64
	args []string
}

func (r semaphoreAcquire) run(ctx context.Context) (bool, error) {
	res, unconfirmed := r.s.exec(ctx, lua.SemaphoreTryAcquire, []string{r.s.name}, r.args)
	ok, err := res.AsBool()
	if err != nil || !ok || unconfirmed == nil {
		return ok, err
	}
	if err := r.s.publishing(ctx, lua.SemaphoreRelease, r.n).Error(); err != nil {
		return false, err
	}
	return false, errUnconfirmed // given back
}

func (r semaphoreAcquire) took(ok bool, err error) bool { return ok && err == nil }

func (r semaphoreAcquire) undo(ctx context.Context, _ bool) {
	err := r.s.publishing(ctx, lua.SemaphoreRelease, r.n).Error()
	r.s.c.obs.log.Debug("rlock: gave back permits taken after their caller gave up", "semaphore", r.s.name, "permits", r.n, "error", err)
}

// exec runs script once; with replica sync on, WAIT follows it, and the error is
// errUnconfirmed when no replica confirmed the write.
func (s *Semaphore) exec(ctx context.Context, script lua.Script, ks, args []string) (rueidis.RedisResult, error) {
	return s.c.syncedExec(ctx, script, ks, args)
}

// syncedExec runs a script that writes once; with replica sync on, WAIT follows it, and the
// error is errUnconfirmed when no replica confirmed the write.
func (c *Client) syncedExec(ctx context.Context, script lua.Script, ks, args []string) (rueidis.RedisResult, error) {
	if c.replicas == nil {
		return script.Exec(ctx, c.rc, ks, args), nil
	}
	return c.replicas.exec(ctx, script, ks, args)
}

// Release gives n permits back and publishes the new number of available permits, which
// wakes that many waiters. It returns ErrInvalidPermits for n ≤ 0.
func (s *Semaphore) Release(ctx context.Context, n int64) error {
	if err := s.checkPermits(n, 1); err != nil {
		return s.fail("Release", err)
	}
	return s.fail("Release", s.publishing(ctx, lua.SemaphoreRelease, n).Error())
}

// AddPermits adds n permits, or removes -n for a negative n (the count may go below zero,
// as Java's), and publishes the new count. It returns ErrInvalidPermits for n = 0.
func (s *Semaphore) AddPermits(ctx context.Context, n int64) error {
	if err := s.c.checkAddPermits(s.name, n); err != nil {
		return s.fail("AddPermits", err)
	}
	return s.fail("AddPermits", s.publishing(ctx, lua.SemaphoreAddPermits, n).Error())
}

// DrainPermits takes every available permit and returns how many it took.
func (s *Semaphore) DrainPermits(ctx context.Context) (int64, error) {
	if err := s.c.checkName(s.name); err != nil {
		return 0, s.fail("DrainPermits", err)
	}
	n, err := lua.SemaphoreDrain.Exec(ctx, s.c.rc, []string{s.name}, nil).AsInt64()
	return n, s.fail("DrainPermits", err)
}

// AvailablePermits returns the number of available permits: 0 when the semaphore has no key.
func (s *Semaphore) AvailablePermits(ctx context.Context) (int64, error) {
	if err := s.c.checkName(s.name); err != nil {
		return 0, s.fail("AvailablePermits", err)
	}
	n, err := s.c.rc.Do(ctx, s.c.rc.B().Get().Key(s.name).Build()).AsInt64()
	if rueidis.IsRedisNil(err) {
		return 0, nil
	}
	return n, s.fail("AvailablePermits", err)
}

// publishing runs script, one of those that publish, with permits n and the Client's
// publish commands, followed by WAIT with replica sync on. A write that no replica
// confirmed is not undone: it stands on the master, as Java's does.
func (s *Semaphore) publishing(ctx context.Context, script lua.Script, n int64) rueidis.RedisResult {
	args := append([]string{strconv.FormatInt(n, 10)}, s.c.publish...)
	res, _ := s.exec(ctx, script, []string{s.name, s.channel}, args)
	return res
}

// checkPermits checks the handle, and that n is at least least.
func (s *Semaphore) checkPermits(n, least int64) error { return s.c.checkPermits(s.name, n, least) }

// checkPermits checks the name of a semaphore, and that n is at least least and fits in
// Java's int (permitsInRange).
func (c *Client) checkPermits(name string, n, least int64) error {
	if err := c.checkName(name); err != nil {
		return err
	}
	if n < least || !permitsInRange(n) {
		return fmt.Errorf("%w: %d", ErrInvalidPermits, n)
	}
	return nil
}

// permitsInRange reports whether n permits fit in Java's int, as Redisson's semaphores take
// them: a count a Java client sharing the semaphore can read, and far below where Redis's
// Lua numbers (doubles) would turn the stored count into a float.
func permitsInRange(n int64) bool { return n >= math.MinInt32 && n <= math.MaxInt32 }

// checkAddPermits checks the name of a semaphore, and that n is a non-zero count in range.
func (c *Client) checkAddPermits(name string, n int64) error {
	if err := c.checkName(name); err != nil {
		return err
	}
	if n == 0 || !permitsInRange(n) {
		return fmt.Errorf("%w: %d", ErrInvalidPermits, n)
	}
	return nil
}

func (s *Semaphore) fail(op string, err error) error {
	if err == nil {
		return nil // the permission needs are built only for an error
	}
	return failOn(op, s.name, s.c.classify(needs{
		calls: [][]string{{"exists", s.name}, {"get", s.name}, {"set", s.name, "0"},
			{"incrby", s.name, "1"}, {"decrby", s.name, "1"}},
		keys:    []string{s.name, s.channel},
		channel: s.channel,
	}, err))
}
