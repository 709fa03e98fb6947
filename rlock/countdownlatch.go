package rlock

import (
	"context"
	"fmt"
	"strconv"

	"github.com/redis/rueidis"

	"github.com/goredisson/goredisson/internal/keys"
	"github.com/goredisson/goredisson/lua"
	"github.com/goredisson/goredisson/pubsub"
)

// CountDownLatch is a countdown latch shared with Java Redisson's RCountDownLatch of the same
// name: its count is the string key name, and its channel
// "redisson_countdownlatch__channel__{name}" carries "0" when the count reaches zero and "1"
// when a count is set or the latch deleted. A latch with no key has count 0: it is open.
//
// Handles are cheap and safe for concurrent use. Every method returns ErrEmptyName for a
// handle with an empty name and ErrClosed once the Client is closed, and every error names
// the method and the latch (`rlock: Await "job:7": …`).
type CountDownLatch struct {
	c       *Client
	name    string
	channel string
}

// NewCountDownLatch returns the handle of the countdown latch called name, as Java's
// getCountDownLatch(name). Like NewLock it never fails.
func (c *Client) NewCountDownLatch(name string) *CountDownLatch {
	return &CountDownLatch{c: c, name: name, channel: keys.LatchChannel(name)}
}

// Name returns the latch's name, its Redis key.
func (l *CountDownLatch) Name() string { return l.name }

// TrySetCount sets the count to n if the latch has no count (never set, reached zero, or
// deleted), publishes "1" and reports true; otherwise it changes nothing and reports false.
// It returns ErrInvalidCount for n ≤ 0.
func (l *CountDownLatch) TrySetCount(ctx context.Context, n int64) (bool, error) {
	if err := l.checkWrite(); err != nil {
		return false, l.fail("TrySetCount", err)
	}
	if n <= 0 {
		return false, l.fail("TrySetCount", fmt.Errorf("%w: %d", ErrInvalidCount, n))
	}
	args := append([]string{"1", strconv.FormatInt(n, 10)}, l.c.publish...)
	set, err := lua.TrySet.Exec(ctx, l.c.rc, []string{l.name, l.channel}, args).AsBool()
	return set, l.fail("TrySetCount", err)
}

// CountDown decrements the count. When it reaches zero the key is deleted and "0" is
// published, which wakes every Await on the latch, Java's and Go's. On a latch that is
// already open it changes nothing.
func (l *CountDownLatch) CountDown(ctx context.Context) error {
	if err := l.checkWrite(); err != nil {
		return l.fail("CountDown", err)
	}
	args := append([]string{"0"}, l.c.publish...)
	err := lua.LatchCountDown.Exec(ctx, l.c.rc, []string{l.name, l.channel}, args).Error()
	if rueidis.IsRedisNil(err) {
		err = nil
	}
	return l.fail("CountDown", err)
}

// Count returns the current count: 0 when the latch is open.
func (l *CountDownLatch) Count(ctx context.Context) (int64, error) {
	if err := l.check(); err != nil {
		return 0, l.fail("Count", err)
	}
	n, err := l.count(ctx)
	return n, l.fail("Count", err)
}

func (l *CountDownLatch) count(ctx context.Context) (int64, error) {
	n, err := l.c.rc.Do(ctx, l.c.rc.B().Get().Key(l.name).Build()).AsInt64()
	if rueidis.IsRedisNil(err) {
		return 0, nil
	}
	return n, err
}

// Await returns nil once the count is zero, at once when it already is (a latch never set
// included, as Java's await). Otherwise it subscribes to the latch's channel and reads the
// count again each time "0" is published; it never polls. It returns ctx.Err() when ctx ends
// first and ErrClosed when the Client is closed.
func (l *CountDownLatch) Await(ctx context.Context) error {
	if err := l.check(); err != nil {
		return l.fail("Await", err)
	}
	err := l.c.waitFor(ctx, unbounded, l.channel, pubsub.LatchRule, func() (attempt, error) {
		n, err := l.count(ctx)
		return attempt{acquired: n <= 0}, err
	})
	return l.fail("Await", err)
}

// Delete deletes the latch and, when it existed, publishes "1" and reports true. Awaiters
// stay asleep: a deleted latch is open, but Redisson announces no opening.
func (l *CountDownLatch) Delete(ctx context.Context) (bool, error) {
	if err := l.checkWrite(); err != nil {
		return false, l.fail("Delete", err)
	}
	args := append([]string{"1"}, l.c.publish...)
	del, err := lua.LatchDelete.Exec(ctx, l.c.rc, []string{l.name, l.channel}, args).AsBool()
	return del, l.fail("Delete", err)
}

func (l *CountDownLatch) check() error { return l.c.checkName(l.name) }

// checkWrite is check for the calls that run a latch script, whose keys are the name and the
// channel: on a cluster they must share a slot, which they do not when the name has a hash
// tag of its own (the channel wraps the whole name in braces).
func (l *CountDownLatch) checkWrite() error {
	if err := l.check(); err != nil {
		return err
	}
	if l.c.rc.Mode() == rueidis.ClientModeCluster && keys.Slot(l.name) != keys.Slot(l.channel) {
		return fmt.Errorf("%w: %q (slot %d) and its channel %q (slot %d)", ErrCrossSlot, l.name, keys.Slot(l.name), l.channel, keys.Slot(l.channel))
	}
	return nil
}

func (l *CountDownLatch) fail(op string, err error) error {
	if err == nil {
		return nil // the permission needs are built only for an error
	}
	return failOn(op, l.name, l.c.classify(needs{
		calls: [][]string{{"exists", l.name}, {"get", l.name}, {"set", l.name, "0"},
			{"decr", l.name}, {"del", l.name}},
		keys:    []string{l.name, l.channel},
		channel: l.channel,
	}, err))
}
