package rlock

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/rueidis"
)

// NoExpiry is what RemainTTL returns for a lock whose key has no TTL.
const NoExpiry time.Duration = -1

// Lock is the handle of one named lock. Every method is safe for concurrent use. Methods
// that act for an owner take it from ctx (see NewOwner) and return ErrNoOwner when ctx
// carries none; every method returns ErrClosed once the Client is closed.
type Lock struct {
	c       *Client
	name    string
	channel string
}

// Name returns the lock's name, which is its Redis key.
func (l *Lock) Name() string { return l.name }

// IsLocked reports whether any owner, of any client, holds the lock (EXISTS).
func (l *Lock) IsLocked(ctx context.Context) (bool, error) {
	if err := l.check(); err != nil {
		return false, err
	}
	n, err := l.c.rc.Do(ctx, l.c.rc.B().Exists().Key(l.name).Build()).AsInt64()
	return n == 1, err
}

// IsHeld reports whether ctx's owner holds the lock through this client (HEXISTS).
func (l *Lock) IsHeld(ctx context.Context) (bool, error) {
	field, err := l.ownerField(ctx)
	if err != nil {
		return false, err
	}
	return l.c.rc.Do(ctx, l.c.rc.B().Hexists().Key(l.name).Field(field).Build()).AsBool()
}

// HoldCount returns how many times ctx's owner holds the lock: 0 when it does not, and
// more than 1 after re-entering (HGET).
func (l *Lock) HoldCount(ctx context.Context) (int, error) {
	field, err := l.ownerField(ctx)
	if err != nil {
		return 0, err
	}
	n, err := l.c.rc.Do(ctx, l.c.rc.B().Hget().Key(l.name).Field(field).Build()).AsInt64()
	if rueidis.IsRedisNil(err) {
		return 0, nil
	}
	return int(n), err
}

// RemainTTL returns the lock's remaining lease (PTTL): 0 when nobody holds the lock, and
// NoExpiry when its key has no TTL.
func (l *Lock) RemainTTL(ctx context.Context) (time.Duration, error) {
	if err := l.check(); err != nil {
		return 0, err
	}
	ms, err := l.c.rc.Do(ctx, l.c.rc.B().Pttl().Key(l.name).Build()).AsInt64()
	switch {
	case err != nil:
		return 0, err
	case ms == -2:
		return 0, nil
	case ms == -1:
		return NoExpiry, nil
	}
	return time.Duration(ms) * time.Millisecond, nil
}

// Held returns a context for work done under the lock. It carries ctx's values (the owner
// included, so calls made with it re-enter) and is cancelled:
//
//   - with cause ErrLockLost (wrapping the reason) when this client learns the hold is gone
//     without the owner's Unlock: for a watchdog hold when renewal finds the owner's field
//     gone (lease ran out, force-unlock, data loss) or cannot renew for a whole lease; for a
//     hold with an explicit lease when that lease runs out; and when this client
//     force-unlocks the lock;
//   - with cause ErrReleased when the owner's final Unlock returns;
//   - with cause ErrClosed when the Client is closed;
//   - when ctx ends, or cancel is called.
//
// A loss is learnt within one renewal interval (a third of the watchdog timeout) of the
// server showing it; see docs/RELIABILITY.md for what no lease-based lock can detect.
// It returns ErrNotHeld when ctx's owner does not hold the lock.
func (l *Lock) Held(ctx context.Context) (context.Context, context.CancelFunc, error) {
	field, err := l.ownerField(ctx)
	if err != nil {
		return nil, nil, err
	}
	rc := l.c.rc
	res := rc.DoMulti(ctx,
		rc.B().Hexists().Key(l.name).Field(field).Build(),
		rc.B().Pttl().Key(l.name).Build())
	held, err := res[0].AsBool()
	if err != nil {
		return nil, nil, err
	}
	ttl, err := res[1].AsInt64()
	if err != nil {
		return nil, nil, err
	}
	if !held {
		return nil, nil, ErrNotHeld
	}
	hctx, cancel := context.WithCancelCause(ctx)
	w := &watch{cancel: cancel}
	if l.c.wheel.Count(l.name, field) == 0 && ttl >= 0 {
		w.timer = time.AfterFunc(time.Duration(ttl)*time.Millisecond, func() {
			l.c.watchers.remove(l.name, field, w)
			cancel(fmt.Errorf("%w: lease expired", ErrLockLost))
		})
	}
	l.c.watchers.add(l.name, field, w)
	return hctx, func() {
		l.c.watchers.remove(l.name, field, w)
		stop([]*watch{w}, context.Canceled)
	}, nil
}

// check returns ErrClosed after Close and ErrEmptyName for a handle without a name.
func (l *Lock) check() error {
	if l.c.closed.Load() {
		return ErrClosed
	}
	if l.name == "" {
		return ErrEmptyName
	}
	return nil
}

// ownerField returns the hash field of the owner carried by ctx, after check.
func (l *Lock) ownerField(ctx context.Context) (string, error) {
	if err := l.check(); err != nil {
		return "", err
	}
	o, ok := OwnerFrom(ctx)
	if !ok {
		return "", ErrNoOwner
	}
	return l.c.field(o), nil
}
