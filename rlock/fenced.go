package rlock

import (
	"context"
	"time"

	"github.com/redis/rueidis"

	"github.com/goredisson/goredisson/internal/keys"
)

// FencedLock is the handle of a fenced lock: a reentrant lock, shared with Java Redisson's
// RFencedLock of the same name, whose every acquisition, a re-entry included, is issued a
// fencing token, a number larger than every token issued for the lock before.
//
// A lease-based lock cannot stop a holder that was paused past its lease (a GC pause, a
// stopped process, a slow network) from acting after another owner acquired the lock. A
// resource that remembers the highest token it has accepted and rejects smaller ones turns
// those late writes into rejected writes: pass the token with every write made under the
// lock (docs/RELIABILITY.md shows the pattern).
//
// The tokens are an INCR of the key "redisson_lock_token:{name}", which has no TTL and
// outlives the lock; they increase as long as that key is not lost (a restart without
// persistence, a failover before it reached a replica, or a delete start it again from 1).
//
// Everything else is the Lock's: the same hash, channel, watchdog, Held contexts, errors and
// contracts. Every method is safe for concurrent use.
type FencedLock struct {
	l *Lock
}

// NewFencedLock returns the handle of the fenced lock called name, as Java's
// getFencedLock(name). Like NewLock it never fails: its calls check the name and the client.
func (c *Client) NewFencedLock(name string) *FencedLock {
	return &FencedLock{l: &Lock{c: c, name: name, channel: keys.LockChannel(name), kind: fenced,
		tokenKey: keys.FencingToken(name)}}
}

// Name returns the lock's name, which is its Redis key.
func (f *FencedLock) Name() string { return f.l.name }

// Lock acquires the lock like Lock.Lock (watchdog lease, waits until acquired or ctx ends)
// and returns the acquisition's token.
func (f *FencedLock) Lock(ctx context.Context) (token int64, err error) { return f.l.lock(ctx) }

// LockFor acquires the lock like Lock.LockFor (an explicit lease, never renewed) and returns
// the acquisition's token. It returns ErrInvalidLease unless lease is positive.
func (f *FencedLock) LockFor(ctx context.Context, lease time.Duration) (token int64, err error) {
	return f.l.lockFor(ctx, lease)
}

// TryLock acquires the lock like Lock.TryLock (waiting at most wait; a zero lease means the
// watchdog) and returns the acquisition's token. It returns ErrLocked when the wait passed
// with the lock held by another owner, and no token.
func (f *FencedLock) TryLock(ctx context.Context, wait, lease time.Duration) (token int64, err error) {
	return f.l.tryLock(ctx, wait, lease)
}

// Token returns the latest token issued for the lock, to any owner of any client (GET of
// the token key), or 0 when none was issued. It is not a proof of holding the lock: use the
// token an acquisition returned.
func (f *FencedLock) Token(ctx context.Context) (int64, error) {
	if err := f.l.check(); err != nil {
		return 0, f.l.fail("Token", err)
	}
	n, err := f.l.c.rc.Do(ctx, f.l.c.rc.B().Get().Key(f.l.tokenKey).Build()).AsInt64()
	if rueidis.IsRedisNil(err) {
		return 0, nil
	}
	return n, f.l.fail("Token", err)
}

// Unlock releases one hold of ctx's owner, as Lock.Unlock. The token counter is left as it
// is.
func (f *FencedLock) Unlock(ctx context.Context) error { return f.l.Unlock(ctx) }

// ForceUnlock deletes the lock whoever holds it, as Lock.ForceUnlock. The token counter is
// left as it is, so later tokens are still larger.
func (f *FencedLock) ForceUnlock(ctx context.Context) (bool, error) { return f.l.ForceUnlock(ctx) }

// IsLocked reports whether any owner, of any client, holds the lock, as Lock.IsLocked.
func (f *FencedLock) IsLocked(ctx context.Context) (bool, error) { return f.l.IsLocked(ctx) }

// IsHeld reports whether ctx's owner holds the lock through this client, as Lock.IsHeld.
func (f *FencedLock) IsHeld(ctx context.Context) (bool, error) { return f.l.IsHeld(ctx) }

// HoldCount returns how many times ctx's owner holds the lock, as Lock.HoldCount.
func (f *FencedLock) HoldCount(ctx context.Context) (int, error) { return f.l.HoldCount(ctx) }

// RemainTTL returns the lock's remaining lease, as Lock.RemainTTL.
func (f *FencedLock) RemainTTL(ctx context.Context) (time.Duration, error) {
	return f.l.RemainTTL(ctx)
}

// Held returns a context for work done under the lock and the function that stops watching
// it, as Lock.Held, with the token of the owner's latest acquisition of the lock. It
// returns ErrNotHeld when ctx's owner holds no lock by this name through this Client.
func (f *FencedLock) Held(ctx context.Context) (context.Context, context.CancelFunc, int64, error) {
	return f.l.held(ctx)
}

// Do runs fn while holding the lock, as Lock.Do, and passes it the acquisition's token
// with the Held context.
func (f *FencedLock) Do(ctx context.Context, fn func(ctx context.Context, token int64) error) error {
	return f.l.run(ctx, "Do", unbounded, fn)
}

// TryDo is Do with a bound on the wait, as Lock.TryDo: ErrLocked, without running fn, when
// another owner kept the lock for the whole wait; ErrInvalidWait for a negative wait.
func (f *FencedLock) TryDo(ctx context.Context, wait time.Duration, fn func(ctx context.Context, token int64) error) error {
	return f.l.tryDo(ctx, wait, fn)
}
