package rlock

import (
	"context"
	"errors"
	"time"
)

// Do runs fn while holding the lock, the one-call form of Lock, Held and Unlock. It acquires
// the lock like Lock (watchdog lease), for ctx's owner or, when ctx carries none, for a newly
// minted one; calls fn with the Held context, which is cancelled if the hold is lost; then
// releases the hold, even when fn panics. It returns the acquire error when the lock was not
// acquired (fn does not run), and otherwise fn's error joined with the release error, so
// that a hold lost while fn ran shows as ErrNotHeld from Unlock.
//
// Hold times are recorded like any other hold (Options.HoldWarning, Observer).
func (l *Lock) Do(ctx context.Context, fn func(ctx context.Context) error) error {
	return l.run(ctx, "Do", unbounded, untokened(fn))
}

// TryDo is Do with a bound on the wait: it returns ErrLocked, without running fn, when
// another owner kept the lock for the whole wait (zero means a single attempt), and
// ErrInvalidWait for a negative wait.
func (l *Lock) TryDo(ctx context.Context, wait time.Duration, fn func(ctx context.Context) error) error {
	return l.tryDo(ctx, wait, untokened(fn))
}

func (l *Lock) tryDo(ctx context.Context, wait time.Duration, fn func(context.Context, int64) error) error {
	if wait < 0 {
		return l.fail("TryDo", ErrInvalidWait)
	}
	return l.run(ctx, "TryDo", bounded(wait), fn)
}

// untokened adapts fn to run's callback, which also takes the acquisition's token.
func untokened(fn func(ctx context.Context) error) func(context.Context, int64) error {
	return func(ctx context.Context, _ int64) error { return fn(ctx) }
}

// run is Do and TryDo: fn gets the Held context and the token of the acquisition (fenced
// locks).
func (l *Lock) run(ctx context.Context, op string, wait waitBound, fn func(context.Context, int64) error) (err error) {
	if _, ok := OwnerFrom(ctx); !ok {
		ctx = NewOwner(ctx)
	}
	token, err := l.acquire(ctx, op, wait, 0)
	if err != nil {
		return l.fail(op, err)
	}
	stop := func() {}
	defer func() {
		uerr := l.Unlock(ctx) // first, so that fn's context ends with ErrReleased
		stop()
		err = errors.Join(err, uerr)
	}()
	field, err := l.ownerField(ctx)
	if err != nil {
		return l.fail(op, err)
	}
	hctx, stop, _, ok := l.c.holds.watch(l.name, field, ctx)
	if !ok {
		return l.fail(op, ErrNotHeld) // the hold ended between the acquisition and now
	}
	return fn(hctx, token)
}
