package rlock

import (
	"context"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/goredisson/goredisson/internal/keys"
	"github.com/goredisson/goredisson/internal/redistest"
)

// The pauses follow Redisson's ExponentialBackOffPolicy: Initial, then ×Multiplier plus a
// jitter of 0 to n-1 ms after the n-th pause, capped at Max, which then repeats.
func TestSpinBackoffPauses(t *testing.T) {
	b, err := SpinBackoff{}.withDefaults()
	require.NoError(t, err)
	assert.Equal(t, SpinBackoff{Initial: time.Millisecond, Max: 128 * time.Millisecond, Multiplier: 2}, b)
	for range 100 {
		p := b.pauses()
		prev := p.pause()
		require.Equal(t, time.Millisecond, prev)
		for n := 1; n < 20; n++ {
			d := p.pause()
			low := min(b.Max, 2*prev)
			high := min(b.Max, 2*prev+time.Duration(n-1)*time.Millisecond)
			require.True(t, d >= low && d <= high, "pause %d: %v after %v, want [%v, %v]", n+1, d, prev, low, high)
			prev = d
		}
		require.Equal(t, b.Max, prev, "capped at Max")
	}
	// Extreme settings: a huge Multiplier never overflows into short pauses, and an Initial
	// above Max is capped from the first pause.
	for _, extreme := range []SpinBackoff{
		{Initial: time.Millisecond, Max: time.Second, Multiplier: 1 << 62},
		{Initial: 100 * time.Millisecond, Max: 50 * time.Millisecond},
	} {
		b, err := extreme.withDefaults()
		require.NoError(t, err)
		p := b.pauses()
		first := p.pause()
		assert.Equal(t, min(b.Initial, b.Max), first, "%+v: first pause", extreme)
		for n := 1; n < 10; n++ {
			assert.Equal(t, b.Max, p.pause(), "%+v: pause %d", extreme, n+1)
		}
	}
	for _, bad := range []SpinBackoff{{Initial: -1}, {Max: -1}, {Multiplier: -1}} {
		_, err := bad.withDefaults()
		assert.ErrorIs(t, err, ErrInvalidOptions)
	}
}

// The spin lock writes the RLock hash; its waiters never subscribe, and its releases
// publish nothing.
func TestSpinLayoutNoPubSub(t *testing.T) {
	srv := redistest.Shared(t)
	c, rc := newClient(t, srv, Options{})
	name := redistest.Name(t)
	channel := keys.LockChannel(name)
	msgs := srv.Listen(t, channel)
	l := c.NewSpinLock(name, SpinBackoff{})
	base := redistest.Context(t, 10*time.Second)
	holder, waiter := NewOwner(base), NewOwner(base)
	require.NoError(t, l.Lock(holder))
	require.NoError(t, l.Lock(holder), "reentrant")
	assert.Equal(t, map[string]string{c.field(mustOwner(t, holder)): "2"}, redistest.HGetAll(t, rc, name))
	assert.InDelta(t, DefaultWatchdogTimeout.Milliseconds(), redistest.PTTL(t, rc, name), 1000)

	before, err := redistest.CommandCalls(base, rc, "evalsha")
	require.NoError(t, err)
	got := make(chan error, 1)
	go func() { got <- l.Lock(waiter) }()
	require.Eventually(t, func() bool {
		n, err := redistest.CommandCalls(base, rc, "evalsha")
		return err == nil && n >= before+5
	}, 5*time.Second, time.Millisecond, "the waiter tries again and again")
	subs, err := rc.Do(base, rc.B().PubsubNumsub().Channel(channel).Build()).AsIntMap()
	require.NoError(t, err)
	assert.Equal(t, int64(1), subs[channel], "only the test's listener: the waiter never subscribed")

	require.NoError(t, l.Unlock(holder))
	require.NoError(t, l.Unlock(holder))
	select {
	case err := <-got:
		require.NoError(t, err, "the waiter takes the lock at its next try")
	case <-time.After(5 * time.Second):
		t.Fatal("the waiter did not take the released lock")
	}
	ok, err := l.ForceUnlock(base)
	require.NoError(t, err)
	assert.True(t, ok)
	require.NoError(t, rc.Do(base, rc.B().Publish().Channel(channel).Message("marker").Build()).Error())
	select {
	case m := <-msgs:
		assert.Equal(t, "marker", m, "neither Unlock nor ForceUnlock published")
	case <-time.After(5 * time.Second):
		t.Fatal("the marker was not heard")
	}
}

func TestSpinTryLockWait(t *testing.T) {
	c, _ := newClient(t, redistest.Shared(t), Options{})
	l := c.NewSpinLock(redistest.Name(t), SpinBackoff{Initial: 10 * time.Millisecond, Max: 40 * time.Millisecond})
	base := redistest.Context(t, 10*time.Second)
	holder, other := NewOwner(base), NewOwner(base)
	require.NoError(t, l.Lock(holder))
	begin := time.Now()
	assert.ErrorIs(t, l.TryLock(other, 0, 0), ErrLocked)
	assert.ErrorIs(t, l.TryLock(other, 150*time.Millisecond, 0), ErrLocked)
	took := time.Since(begin)
	assert.GreaterOrEqual(t, took, 150*time.Millisecond)
	assert.Less(t, took, time.Second)

	short, cancel := context.WithTimeout(other, 50*time.Millisecond)
	defer cancel()
	assert.ErrorIs(t, l.Lock(short), context.DeadlineExceeded)

	got := make(chan error, 1)
	go func() { got <- l.Lock(other) }()
	require.Eventually(t, func() bool { return c.holds.count() == 1 }, time.Second, time.Millisecond)
	c.Close()
	select {
	case err := <-got:
		assert.ErrorIs(t, err, ErrClosed, "a spinning acquire ends at its next try after Close")
	case <-time.After(5 * time.Second):
		t.Fatal("the spinning acquire did not end after Close")
	}
}

func TestSpinMutualExclusion(t *testing.T) {
	name := redistest.Name(t)
	ov := contend(t, redistest.Shared(t), 3, 3, 20, func(c *Client) func(context.Context, func()) error {
		l := c.NewSpinLock(name, SpinBackoff{})
		return func(ctx context.Context, inside func()) error {
			return l.Do(ctx, func(context.Context) error { inside(); return nil })
		}
	})
	assert.Zero(t, ov.Violations())
	assert.Equal(t, int64(180), ov.Entries())
}

// The cost of spinning: the script calls one waiter sends while another owner holds the
// lock for a given time, and how long after the release it gets the lock, next to the
// pub/sub lock's waiter (which sends its tries, plus one SUBSCRIBE and one UNSUBSCRIBE).
func TestSpinCommandsPerAcquisition(t *testing.T) {
	srv := redistest.Start(t)
	c, rc := newClient(t, srv, Options{})
	for _, hold := range []time.Duration{time.Millisecond, 10 * time.Millisecond, 50 * time.Millisecond,
		200 * time.Millisecond, time.Second} {
		for _, kind := range []string{"spin", "lock"} {
			name := redistest.Name(t)
			l := c.NewLock(name)
			if kind == "spin" {
				l = c.NewSpinLock(name, SpinBackoff{})
			}
			base := redistest.Context(t, 30*time.Second)
			holder, waiter := NewOwner(base), NewOwner(base)
			require.NoError(t, l.Lock(holder))
			before := scriptCalls(t, rc)
			got := make(chan time.Time, 1)
			go func() {
				assert.NoError(t, l.Lock(waiter))
				got <- time.Now()
			}()
			time.Sleep(hold) // the holder's work
			released := time.Now()
			require.NoError(t, l.Unlock(holder))
			var at time.Time
			select {
			case at = <-got:
			case <-time.After(10 * time.Second):
				t.Fatal("the waiter did not get the lock")
			}
			tries := scriptCalls(t, rc) - before - 1 // less the holder's release
			require.NoError(t, l.Unlock(waiter))
			assert.Positive(t, tries)
			t.Logf("%s: hold %v, the waiter sent %d acquire scripts and got the lock %v after the release",
				kind, hold, tries, at.Sub(released).Round(10*time.Microsecond))
		}
	}
}

func scriptCalls(t *testing.T, rc rueidis.Client) int64 {
	t.Helper()
	var total int64
	for _, cmd := range []string{"evalsha", "eval"} {
		n, err := redistest.CommandCalls(context.Background(), rc, cmd)
		require.NoError(t, err)
		total += n
	}
	return total
}

func TestSpinBadInput(t *testing.T) {
	c, _ := newClient(t, redistest.Shared(t), Options{})
	owned := NewOwner(redistest.Context(t, 10*time.Second))
	assert.ErrorIs(t, c.NewSpinLock("", SpinBackoff{}).Lock(owned), ErrEmptyName)
	bad := c.NewSpinLock(redistest.Name(t), SpinBackoff{Max: -time.Second})
	err := bad.Lock(owned)
	assert.ErrorIs(t, err, ErrInvalidOptions)
	assert.Contains(t, err.Error(), "SpinBackoff.Max")
	l := c.NewSpinLock(redistest.Name(t), SpinBackoff{})
	assert.ErrorIs(t, l.TryLock(owned, -time.Second, 0), ErrInvalidWait)
	assert.ErrorIs(t, l.LockFor(owned, 0), ErrInvalidLease)
	assert.ErrorIs(t, l.Lock(context.Background()), ErrNoOwner)
	c.Close()
	assert.ErrorIs(t, l.Lock(owned), ErrClosed)
}
