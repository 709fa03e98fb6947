package rlock

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/rueidis"

	"github.com/goredisson/goredisson/internal/backoff"
	"github.com/goredisson/goredisson/internal/keys"
	"github.com/goredisson/goredisson/lua"
	"github.com/goredisson/goredisson/pubsub"
)

// ExpirableSemaphore is a semaphore whose permits are named and leased, shared with Java
// Redisson's RPermitExpirableSemaphore of the same name. Its available permits are the
// string key name; the permits held are the sorted set "{name}:timeout", whose members are
// the permit ids (16 random bytes) scored with the Unix millisecond at which each permit
// expires; its channel "redisson_sc:{name}" is the semaphore's. A permit id is shown as 32
// lowercase hexadecimal digits, as Java shows it, and either side may release an id the
// other acquired.
//
// A permit acquired with a lease that is not released in time expires: the next call that
// reclaims (an acquire, AvailablePermits, Permits, AcquiredPermits, the lease calls, a
// release of several ids) gives it back and publishes the new count. Expiry is judged by
// the clock of the client making that call, as in Java, so the clocks of the clients
// sharing a semaphore should agree.
//
// Handles are cheap and safe for concurrent use. Every method returns ErrEmptyName for a
// handle with an empty name and ErrClosed once the Client is closed, and every error names
// the method and the semaphore (`rlock: Release "quota": …`).
type ExpirableSemaphore struct {
	c        *Client
	name     string
	timeouts string
	channel  string
}

// NewExpirableSemaphore returns the handle of the permit-expirable semaphore called name, as
// Java's getPermitExpirableSemaphore(name). Like NewLock it never fails.
func (c *Client) NewExpirableSemaphore(name string) *ExpirableSemaphore {
	return &ExpirableSemaphore{c: c, name: name, timeouts: keys.PermitTimeouts(name), channel: keys.SemaphoreChannel(name)}
}

// Name returns the semaphore's name, the Redis key of its available permits.
func (s *ExpirableSemaphore) Name() string { return s.name }

// TrySetPermits sets the available permits to n if the semaphore has no key, publishes n
// and reports true; otherwise it changes nothing and reports false. It returns
// ErrInvalidPermits for a negative n.
func (s *ExpirableSemaphore) TrySetPermits(ctx context.Context, n int64) (bool, error) {
	if err := s.checkPermits(n, 0); err != nil {
		return false, s.fail("TrySetPermits", err)
	}
	permits := strconv.FormatInt(n, 10)
	res, _ := s.c.syncedExec(ctx, lua.TrySet, []string{s.name, s.channel}, append([]string{permits, permits}, s.c.publish...))
	set, err := res.AsBool()
	return set, s.fail("TrySetPermits", err)
}

// AddPermits adds n available permits, or removes -n for a negative n (the count may go
// below zero, as Java's). A positive n is published, which wakes n waiters. It returns
// ErrInvalidPermits for n = 0.
func (s *ExpirableSemaphore) AddPermits(ctx context.Context, n int64) error {
	if err := s.c.checkAddPermits(s.name, n); err != nil {
		return s.fail("AddPermits", err)
	}
	res, _ := s.exec(ctx, lua.PermitsAdd, strconv.FormatInt(n, 10))
	return s.fail("AddPermits", res.Error())
}

// Acquire takes n permits, waiting as long as ctx allows until n are available together,
// and returns their ids. Each permit expires lease after it was taken unless released or
// its lease updated before; a lease of 0 means it never expires. While too few permits are
// available it sleeps until a release is published or the earliest held permit expires
// (nobody publishes an expiry: the waiter wakes on its own at that time and reclaims the
// permit), and does not poll. It returns ErrInvalidPermits for n ≤ 0 or n > 5,000 (each
// permit has an id of its own; Redisson cannot reclaim more expired permits at once), ErrInvalidLease for a negative lease, and ctx.Err() when ctx
// ends first, having taken nothing.
func (s *ExpirableSemaphore) Acquire(ctx context.Context, n int64, lease time.Duration) ([]string, error) {
	ids, err := s.acquire(ctx, n, lease, unbounded)
	return ids, s.fail("Acquire", err)
}

// TryAcquire is Acquire bounded by wait: it returns the n ids and nil when it took them,
// and nil ids and an error matching ErrNoPermits (and so ErrLocked, as every Try of the
// package), having taken nothing, when n permits did not become available within wait; a
// wait of 0 makes a single attempt. It returns ErrInvalidWait for a negative wait.
func (s *ExpirableSemaphore) TryAcquire(ctx context.Context, n int64, wait, lease time.Duration) ([]string, error) {
	if wait < 0 {
		return nil, s.fail("TryAcquire", fmt.Errorf("%w: %v", ErrInvalidWait, wait))
	}
	ids, err := s.acquire(ctx, n, lease, bounded(wait))
	if err != nil {
		return nil, s.fail("TryAcquire", noPermits(err))
	}
	return ids, nil
}

func (s *ExpirableSemaphore) acquire(ctx context.Context, n int64, lease time.Duration, wait waitBound) ([]string, error) {
	if err := s.checkPermits(n, 1); err != nil {
		return nil, err
	}
	if n > maxPermitIDs {
		return nil, fmt.Errorf("%w: %d (at most %d permits per call, each with an id of its own)", ErrInvalidPermits, n, maxPermitIDs)
	}
	if lease < 0 {
		return nil, fmt.Errorf("%w: %v", ErrInvalidLease, lease)
	}
	var ids []string
	err := s.c.waitFor(ctx, wait, s.channel, pubsub.SemaphoreRule, func() (a attempt, err error) {
		ids, a, err = s.try(ctx, n, lease)
		return a, err
	})
	if err != nil {
		return nil, err
	}
	return ids, nil
}

// minExpiryWait is the shortest sleep until a held permit expires. The acquire script
// reclaims every permit it reports as expired, so the earliest expiry it reports is in the
// future by the caller's clock; the floor only keeps a clock step back from busy looping.
const minExpiryWait = 10 * time.Millisecond

// try runs the acquire script once with n new ids, on a context detached from ctx's
// cancellation (detachedAcquire): permits taken by a request whose caller gave up meanwhile
// are given back. When the permits are not available the attempt carries the time until
// the earliest held permit expires, if one does, so that the waiting core wakes then. With replica sync, permits that no replica confirmed are
// given back and taken again (with new ids) after a pause, replicaSyncTries tries in all.
func (s *ExpirableSemaphore) try(ctx context.Context, n int64, lease time.Duration) ([]string, attempt, error) {
	req := permitAcquire{s, n, lease}
	r, err := retryUnconfirmed(ctx, func() (permitAttempt, error) { return detachedAcquire(s.c, ctx, req) })
	return r.ids, r.a, err
}

// permitAcquire is one run of the acquire script for n permits with lease, as
// detachedAcquire takes it.
type permitAcquire struct {
	s     *ExpirableSemaphore
	n     int64
	lease time.Duration
}

func (r permitAcquire) run(ctx context.Context) (permitAttempt, error) {
	return r.s.tryOnce(ctx, r.n, r.lease)
}

func (r permitAcquire) took(p permitAttempt, err error) bool { return err == nil && p.a.acquired }

func (r permitAcquire) undo(ctx context.Context, p permitAttempt) {
	_, err := r.s.release(ctx, p.raw)
	r.s.c.obs.log.Debug("rlock: gave back permits taken after their caller gave up", "semaphore", r.s.name, "error", err)
}

// permitAttempt is the outcome of one run of the acquire script: the ids taken (shown and
// raw) when acquired.
type permitAttempt struct {
	ids, raw []string
	a        attempt
}

// tryOnce is one run of the acquire script for try, with n new ids. A request whose reply
// was lost (uncertain), or that ctx's deadline cut (ctx is detached from the caller's: only
// ReleaseTimeout ends it), may have taken the permits, which forget gives back.
func (s *ExpirableSemaphore) tryOnce(ctx context.Context, n int64, lease time.Duration) (permitAttempt, error) {
	ids, raw := newPermitIDs(n)
	now := time.Now().UnixMilli()
	score := lua.NeverExpires
	if lease > 0 {
		score = strconv.FormatInt(now+max(lease.Milliseconds(), 1), 10)
	}
	res, unconfirmed := s.c.syncedExec(ctx, lua.PermitsAcquire, s.keys(),
		append([]string{strconv.FormatInt(now, 10), s.publish(), strconv.FormatInt(n, 10), score}, raw...))
	reply, err := res.ToString()
	switch {
	case rueidis.IsRedisNil(err):
		return permitAttempt{}, nil
	case uncertain(err), err != nil && ctx.Err() != nil:
		s.forget(ctx, raw)
		return permitAttempt{}, err
	case err != nil:
		return permitAttempt{}, err
	case reply == "OK" && unconfirmed != nil:
		if _, err := s.release(ctx, raw); err != nil {
			return permitAttempt{}, err
		}
		return permitAttempt{}, errUnconfirmed // given back
	case reply == "OK":
		return permitAttempt{ids: ids, raw: raw, a: attempt{acquired: true}}, nil
	}
	expiry, err := strconv.ParseFloat(strings.TrimPrefix(reply, ":"), 64)
	if err != nil {
		return permitAttempt{}, fmt.Errorf("rlock: unexpected acquire reply %q", reply)
	}
	ttl := max(millis(int64(expiry)-time.Now().UnixMilli()), minExpiryWait)
	return permitAttempt{a: attempt{expires: true, ttl: ttl}}, nil
}

// forget gives back the permits raw, which an acquire whose reply was lost (uncertain) may
// have taken, after lostRequestGrace and bounded by ReleaseTimeout. When that fails too, permits the request took
// come back when their lease ends (never, for permits taken without a lease).
func (s *ExpirableSemaphore) forget(ctx context.Context, raw []string) {
	rctx := detach(ctx, s.c.opts.ReleaseTimeout)
	afterLostRequest(rctx)
	retry := backoff.New(10*time.Millisecond, 500*time.Millisecond)
	for {
		_, err := s.release(rctx, raw)
		if !transient(err) || !retry.Wait(rctx) {
			s.c.obs.log.Debug("rlock: released permits an acquire may have taken before its reply was lost", "semaphore", s.name, "error", err)
			return
		}
	}
}

// maxPermitIDs is the most permits one Acquire or TryAcquire takes: each has an id of its
// own, made by the client and passed to the script. Redisson's acquire reclaims every
// expired permit of the semaphore in one Lua unpack, which fails from about 8,000 ("too many
// results to unpack"): one Go call never creates more than Java can reclaim.
const maxPermitIDs = 5000

// newPermitIDs returns n new permit ids, as shown (hex) and as stored (raw bytes).
func newPermitIDs(n int64) (ids, raw []string) {
	ids, raw = make([]string, n), make([]string, n)
	for i := range ids {
		b := make([]byte, 16)
		_, _ = rand.Read(b) // never fails
		ids[i], raw[i] = hex.EncodeToString(b), string(b)
	}
	return ids, raw
}

// Release gives back the permits of ids, all or none: when any of them is not held (never
// acquired, already released, or expired) it returns ErrPermitNotHeld. Releasing one id
// publishes the new count, several the number released, which wakes that many waiters. One
// id whose lease ran out but that no call has reclaimed yet is given back all the same, and
// the error is still ErrPermitNotHeld, as with Java. It returns ErrInvalidPermitID for an
// id that is not 32 hexadecimal digits or is given twice, and ErrInvalidPermits for no id.
func (s *ExpirableSemaphore) Release(ctx context.Context, ids ...string) error {
	raw, err := s.checkIDs(ids)
	if err != nil {
		return s.fail("Release", err)
	}
	released, err := s.release(ctx, raw)
	if err == nil && !released {
		err = fmt.Errorf("%w: %s", ErrPermitNotHeld, strings.Join(ids, ", "))
	}
	return s.fail("Release", err)
}

// TryRelease gives back the permit of id and reports whether it was held and had not
// expired; a permit that expired but was not yet reclaimed is given back and reported
// false. It returns ErrInvalidPermitID for an id that is not 32 hexadecimal digits.
func (s *ExpirableSemaphore) TryRelease(ctx context.Context, id string) (bool, error) {
	raw, err := s.checkIDs([]string{id})
	if err != nil {
		return false, s.fail("TryRelease", err)
	}
	released, err := s.release(ctx, raw)
	return released, s.fail("TryRelease", err)
}

// release runs the release script of one id, or of several, with the raw ids.
func (s *ExpirableSemaphore) release(ctx context.Context, raw []string) (bool, error) {
	script := lua.PermitRelease
	if len(raw) > 1 {
		script = lua.PermitsRelease
	}
	res, _ := s.exec(ctx, script, raw...)
	n, err := res.AsInt64()
	return n > 0, err
}

// AvailablePermits returns the number of available permits after giving back the expired
// ones: 0 when the semaphore has no key.
func (s *ExpirableSemaphore) AvailablePermits(ctx context.Context) (int64, error) {
	return s.count(ctx, "AvailablePermits", "available")
}

// AcquiredPermits returns the number of permits held, after giving back the expired ones.
func (s *ExpirableSemaphore) AcquiredPermits(ctx context.Context) (int64, error) {
	return s.count(ctx, "AcquiredPermits", "acquired")
}

// Permits returns the number of permits, available and held, after giving back the expired
// ones: 0 when the semaphore has no key (Java's getPermits).
func (s *ExpirableSemaphore) Permits(ctx context.Context) (int64, error) {
	return s.count(ctx, "Permits", "permits")
}

func (s *ExpirableSemaphore) count(ctx context.Context, op, which string) (int64, error) {
	if err := s.c.checkName(s.name); err != nil {
		return 0, s.fail(op, err)
	}
	res, _ := s.exec(ctx, lua.PermitsCount, which)
	n, err := res.AsInt64()
	return n, s.fail(op, err)
}

// UpdateLeaseTime sets the lease of the held permit id to lease from now (0: it never
// expires) and reports true; it reports false when the permit is not held, having expired
// permits given back first. It returns ErrInvalidLease for a negative lease and
// ErrInvalidPermitID for a malformed id.
func (s *ExpirableSemaphore) UpdateLeaseTime(ctx context.Context, id string, lease time.Duration) (bool, error) {
	raw, err := s.checkIDs([]string{id})
	if err == nil && lease < 0 {
		err = fmt.Errorf("%w: %v", ErrInvalidLease, lease)
	}
	if err != nil {
		return false, s.fail("UpdateLeaseTime", err)
	}
	score := lua.NeverExpires
	if lease > 0 {
		score = strconv.FormatInt(time.Now().UnixMilli()+max(lease.Milliseconds(), 1), 10)
	}
	res, _ := s.exec(ctx, lua.PermitLease, raw[0], score)
	if err := res.Error(); rueidis.IsRedisNil(err) {
		return false, nil
	}
	_, err = res.AsInt64()
	return err == nil, s.fail("UpdateLeaseTime", err)
}

// LeaseTime returns the remaining lease of the held permit id, and false for a permit that
// never expires. It returns ErrPermitNotHeld when the permit is not held (expired permits
// are given back first) and ErrInvalidPermitID for a malformed id.
func (s *ExpirableSemaphore) LeaseTime(ctx context.Context, id string) (time.Duration, bool, error) {
	raw, err := s.checkIDs([]string{id})
	if err != nil {
		return 0, false, s.fail("LeaseTime", err)
	}
	res, _ := s.exec(ctx, lua.PermitLease, raw[0], "")
	ms, err := res.AsInt64()
	switch {
	case rueidis.IsRedisNil(err):
		return 0, false, s.fail("LeaseTime", fmt.Errorf("%w: %s", ErrPermitNotHeld, id))
	case err != nil:
		return 0, false, s.fail("LeaseTime", err)
	case ms == -1:
		return 0, false, nil
	}
	return millis(ms), true, nil
}

// Delete removes the semaphore, its available permits and the permits held, and reports
// whether it existed. Holders' permit ids are then no longer held; waiters keep waiting for
// permits set anew.
func (s *ExpirableSemaphore) Delete(ctx context.Context) (bool, error) {
	if err := s.c.checkName(s.name); err != nil {
		return false, s.fail("Delete", err)
	}
	n, err := s.c.rc.Do(ctx, s.c.rc.B().Del().Key(s.name, s.timeouts).Build()).AsInt64()
	return n > 0, s.fail("Delete", err)
}

// exec runs one of the semaphore's scripts with now, the publish commands and args; with
// replica sync on, WAIT follows it. A write no replica confirmed stands on the master, as
// Java's does.
func (s *ExpirableSemaphore) exec(ctx context.Context, script lua.Script, args ...string) (rueidis.RedisResult, error) {
	return s.c.syncedExec(ctx, script, s.keys(), append([]string{strconv.FormatInt(time.Now().UnixMilli(), 10), s.publish()}, args...))
}

func (s *ExpirableSemaphore) keys() []string { return []string{s.name, s.timeouts, s.channel} }

func (s *ExpirableSemaphore) publish() string { return strings.Join(s.c.publish, " ") }

// checkIDs checks the handle and ids, and returns the ids as stored.
func (s *ExpirableSemaphore) checkIDs(ids []string) ([]string, error) {
	if err := s.c.checkName(s.name); err != nil {
		return nil, err
	}
	if len(ids) == 0 {
		return nil, fmt.Errorf("%w: no permit id", ErrInvalidPermits)
	}
	raw := make([]string, len(ids))
	seen := make(map[string]bool, len(ids))
	for i, id := range ids {
		b, err := hex.DecodeString(id)
		if err != nil || len(b) != 16 {
			return nil, fmt.Errorf("%w: %q is not 32 hexadecimal digits", ErrInvalidPermitID, id)
		}
		if seen[string(b)] {
			return nil, fmt.Errorf("%w: %q given twice", ErrInvalidPermitID, id)
		}
		seen[string(b)] = true
		raw[i] = string(b)
	}
	return raw, nil
}

// checkPermits checks the handle, and that n is at least least.
func (s *ExpirableSemaphore) checkPermits(n, least int64) error {
	return s.c.checkPermits(s.name, n, least)
}

func (s *ExpirableSemaphore) fail(op string, err error) error {
	if err == nil {
		return nil // the permission needs are built only for an error
	}
	return failOn(op, s.name, s.c.classify(s.needs(), err))
}
