package pubsub

import (
	"context"
	"fmt"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/goredisson/goredisson/internal/redistest"
)

func TestMain(m *testing.M) { redistest.Main(m) }

var seq atomic.Int64

func channelName() string { return fmt.Sprintf("redisson_lock__channel:{test-%d}", seq.Add(1)) }

// testTimeout bounds the contexts of the tests' calls.
const testTimeout = 20 * time.Second

func publish(t *testing.T, rc rueidis.Client, channel, msg string) {
	require.NoError(t, rc.Do(context.Background(), rc.B().Publish().Channel(channel).Message(msg).Build()).Error())
}

func woken(w *Waiter) bool { return len(w.wake) == 1 }

// wokenSet returns which of ws have a wake-up pending.
func wokenSet(ws []*Waiter) []bool {
	out := make([]bool, len(ws))
	for i, w := range ws {
		out[i] = woken(w)
	}
	return out
}

func subscribeN(t *testing.T, s *Subscriber, channel string, n int, rule Rule) []*Waiter {
	ws := make([]*Waiter, n)
	for i := range ws {
		w, err := s.Subscribe(redistest.Context(t, testTimeout), channel, rule)
		require.NoError(t, err)
		ws[i] = w
	}
	return ws
}

func closeAll(ws []*Waiter) {
	for _, w := range ws {
		w.Close()
	}
}

// newSubscriber returns a Subscriber on rc, closed in t.Cleanup (before rc, created earlier).
func newSubscriber(t *testing.T, rc rueidis.Client, listen Kinds) *Subscriber {
	s := New(rc, listen)
	t.Cleanup(s.Close)
	return s
}

// newTest returns, on the shared server, a client to observe and publish with, a Classic
// Subscriber on a client of its own, and a channel no other test uses.
func newTest(t *testing.T) (rc rueidis.Client, s *Subscriber, ch string) {
	srv := redistest.Shared(t)
	return srv.Client(t), newSubscriber(t, srv.Client(t), Classic), channelName()
}

// subOf returns the subscription that s's waiters on channel use.
func subOf(t *testing.T, s *Subscriber, channel string) *sub {
	s.mu.Lock()
	defer s.mu.Unlock()
	g := s.byChannel[groupKey{channel: channel}]
	require.NotNil(t, g, "no waiters on %s", channel)
	return g.subs[0]
}

// idle reports whether the hub of s has no subscription, live or ending.
func idle(s *Subscriber) bool {
	s.h.mu.Lock()
	defer s.h.mu.Unlock()
	return len(s.h.live) == 0 && len(s.h.draining) == 0
}

// registered reports whether rc has a hub.
func registered(rc rueidis.Client) bool {
	hubs.Lock()
	defer hubs.Unlock()
	return hubs.m[rc] != nil
}

// requireWokenBy publishes msg on channel and waits, at most 5 s, until cond holds.
func requireWokenBy(t *testing.T, rc rueidis.Client, channel, msg string, cond func() bool, what string) {
	t.Helper()
	publish(t, rc, channel, msg)
	require.Eventually(t, cond, 5*time.Second, time.Millisecond, what)
}

func TestOneSubscriptionSharedByWaiters(t *testing.T) { // RL-01, RL-02
	rc, s, ch := newTest(t)
	ws := subscribeN(t, s, ch, 20, LockRule)
	assert.Equal(t, int64(1), redistest.NumSub(t, rc, ch), "20 waiters share one subscription")
	closeAll(ws)
	require.Eventually(t, func() bool { return redistest.NumSub(t, rc, ch) == 0 }, 5*time.Second, 5*time.Millisecond,
		"the last waiter's Close unsubscribes")
	require.Eventually(t, func() bool { return idle(s) }, 5*time.Second, 5*time.Millisecond)
	chans, err := rc.Do(context.Background(), rc.B().PubsubChannels().Pattern(ch).Build()).AsStrSlice()
	require.NoError(t, err)
	assert.Empty(t, chans)
}

func TestResubscribeAfterUnsubscribeRace(t *testing.T) {
	rc, s, ch := newTest(t)
	for range 50 { // the next subscription starts while the previous one is unsubscribing
		w := subscribeN(t, s, ch, 1, LockRule)[0]
		assert.Equal(t, int64(1), redistest.NumSub(t, rc, ch))
		w.Close()
	}
	require.Eventually(t, func() bool { return redistest.NumSub(t, rc, ch) == 0 }, 5*time.Second, 5*time.Millisecond)
}

// TestReadWriteClasses: a read-write lock's readers and writers wait on one channel in two
// classes, on one server-side subscription. "0" and "1" each wake every reader (ReadRule)
// and one writer (WriteRule), whatever the order in which they arrived.
func TestReadWriteClasses(t *testing.T) {
	rc, s, ch := newTest(t)
	writers := make([]*Waiter, 2)
	var readers []*Waiter
	ctx := redistest.Context(t, testTimeout)
	for i := range 2 { // a writer first, so that a single class would follow WriteRule
		w, err := s.SubscribeClass(ctx, ch, "write", WriteRule)
		require.NoError(t, err)
		writers[i] = w
		r, err := s.SubscribeClass(ctx, ch, "read", ReadRule)
		require.NoError(t, err)
		readers = append(readers, r)
	}
	defer closeAll(append(readers, writers...))
	assert.Equal(t, int64(1), redistest.NumSub(t, rc, ch), "one subscription for both classes")

	publish(t, rc, ch, "7") // ignored
	for _, msg := range []string{"1", "0"} {
		requireWokenBy(t, rc, ch, msg, func() bool { return woken(readers[0]) && woken(readers[1]) && woken(writers[0]) },
			msg+" wakes every reader and the first writer")
		assert.False(t, woken(writers[1]), "%s wakes one writer", msg)
		for _, w := range append(readers, writers[0]) {
			require.NoError(t, w.Wait(ctx))
		}
	}
}

// TestLockRule: RLock's rule, Redisson's LockPubSub.
func TestLockRule(t *testing.T) {
	rc, s, ch := newTest(t)
	ws := subscribeN(t, s, ch, 3, LockRule)
	defer closeAll(ws)

	publish(t, rc, ch, "7") // ignored
	requireWokenBy(t, rc, ch, "0", func() bool { return woken(ws[0]) }, "0 wakes the first to arrive")
	assert.Equal(t, []bool{true, false, false}, wokenSet(ws), "7 wakes none, 0 wakes one")

	requireWokenBy(t, rc, ch, "0", func() bool { return woken(ws[1]) }, "the first has a wake-up pending: the next one is woken")
	assert.False(t, woken(ws[2]))

	require.NoError(t, ws[0].Wait(redistest.Context(t, testTimeout)), "a pending wake-up is consumed at once")
	assert.False(t, woken(ws[0]))

	requireWokenBy(t, rc, ch, "1", func() bool { return woken(ws[0]) && woken(ws[1]) && woken(ws[2]) }, "1 wakes all")
}

// TestRulesOfTheLockFamily: the rules the other Redisson objects state, on real messages.
func TestRulesOfTheLockFamily(t *testing.T) {
	srv := redistest.Shared(t)
	rc := srv.Client(t)
	s := newSubscriber(t, srv.Client(t), Classic)

	t.Run("FairLock", func(t *testing.T) { // one channel per waiter: any message wakes it
		anyMessage := func(string) Wake { return WakeN(1) }
		chA, chB := channelName(), channelName()
		a, b := subscribeN(t, s, chA, 1, anyMessage)[0], subscribeN(t, s, chB, 1, anyMessage)[0]
		defer a.Close()
		defer b.Close()
		requireWokenBy(t, rc, chB, "0", func() bool { return woken(b) }, "the message on b's channel wakes b")
		assert.False(t, woken(a), "and not the waiter of another channel")
		requireWokenBy(t, rc, chA, "whatever", func() bool { return woken(a) }, "any message wakes")
	})

	t.Run("Semaphore", func(t *testing.T) { // the message is the number of released permits
		permits := func(m string) Wake {
			n, err := strconv.Atoi(m)
			if err != nil {
				return WakeNone
			}
			return WakeN(n)
		}
		ch := channelName()
		ws := subscribeN(t, s, ch, 5, permits)
		defer closeAll(ws)
		requireWokenBy(t, rc, ch, "2", func() bool { return woken(ws[0]) && woken(ws[1]) }, "2 permits wake two")
		assert.Equal(t, []bool{true, true, false, false, false}, wokenSet(ws))
		requireWokenBy(t, rc, ch, "9", func() bool { return woken(ws[2]) && woken(ws[3]) && woken(ws[4]) },
			"more permits than waiters wake every waiter without a pending wake-up")
		for _, w := range ws {
			require.NoError(t, w.Wait(redistest.Context(t, testTimeout)))
		}
		publish(t, rc, ch, "x")
		publish(t, rc, ch, "0")
		requireWokenBy(t, rc, ch, "1", func() bool { return woken(ws[0]) }, "1 permit wakes the first")
		assert.Equal(t, []bool{true, false, false, false, false}, wokenSet(ws), "a non-number and 0 wake none")
	})

	t.Run("CountDownLatch", func(t *testing.T) { // "0": the count reached zero
		latch := func(m string) Wake {
			if m == "0" {
				return WakeAll
			}
			return WakeNone
		}
		ch := channelName()
		ws := subscribeN(t, s, ch, 3, latch)
		defer closeAll(ws)
		publish(t, rc, ch, "1") // a new count: wakes none
		requireWokenBy(t, rc, ch, "0", func() bool { return woken(ws[0]) && woken(ws[1]) && woken(ws[2]) }, "0 wakes all")
		for _, w := range ws {
			require.NoError(t, w.Wait(redistest.Context(t, testTimeout)))
		}
		assert.Equal(t, []bool{false, false, false}, wokenSet(ws), "1 woke none")
	})
}

func TestCloseHandsPendingWakeToNext(t *testing.T) {
	rc, s, ch := newTest(t)
	ws := subscribeN(t, s, ch, 2, LockRule)
	defer ws[1].Close()
	requireWokenBy(t, rc, ch, "0", func() bool { return woken(ws[0]) }, "0 wakes the first")
	ws[0].Close() // leaves without consuming its wake-up
	assert.True(t, woken(ws[1]), "the wake-up is not lost")
}

func TestWaitBounds(t *testing.T) {
	srv := redistest.Shared(t)
	rc := srv.Client(t)
	s := newSubscriber(t, rc, Classic)
	channel := channelName()
	w := subscribeN(t, s, channel, 1, LockRule)[0]
	defer w.Close()

	t.Run("time bound", func(t *testing.T) {
		start := time.Now()
		byWake, err := w.WaitAtMost(redistest.Context(t, testTimeout), 50*time.Millisecond)
		require.NoError(t, err, "the time bound ends the wait")
		assert.False(t, byWake, "the bound, not a wake-up, ended it")
		assert.GreaterOrEqual(t, time.Since(start), 50*time.Millisecond)
	})

	t.Run("wake-up", func(t *testing.T) {
		publish(t, rc, channel, "0")
		byWake, err := w.WaitAtMost(redistest.Context(t, testTimeout), time.Minute)
		require.NoError(t, err)
		assert.True(t, byWake, "a release message, not the bound, ended it")
	})

	t.Run("context deadline", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
		defer cancel()
		assert.ErrorIs(t, w.Wait(ctx), context.DeadlineExceeded)
	})
}

func TestCancelledSubscribeLeavesNothing(t *testing.T) {
	rc, s, ch := newTest(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := s.Subscribe(ctx, ch, LockRule)
	assert.ErrorIs(t, err, context.Canceled)
	require.Eventually(t, func() bool { return idle(s) && redistest.NumSub(t, rc, ch) == 0 },
		5*time.Second, 5*time.Millisecond)
}

func TestCloseEndsWaits(t *testing.T) {
	srv := redistest.Shared(t)
	s := New(srv.Client(t), Classic)
	w := subscribeN(t, s, channelName(), 1, LockRule)[0]
	done := make(chan error, 1)
	go func() { done <- w.Wait(context.Background()) }()
	s.Close()
	assert.ErrorIs(t, <-done, ErrClosed)
	w.Close()
	_, err := s.Subscribe(redistest.Context(t, testTimeout), channelName(), LockRule)
	assert.ErrorIs(t, err, ErrClosed)
	s.Close() // idempotent
}

func TestReconnectResubscribesAndWakesAll(t *testing.T) { // F6
	rc, s, ch := newTest(t)
	ws := subscribeN(t, s, ch, 2, LockRule)
	defer closeAll(ws)
	redistest.KillSubscribers(t, rc)
	require.Eventually(t, func() bool { return woken(ws[0]) && woken(ws[1]) }, 10*time.Second, time.Millisecond,
		"every waiter is woken to re-check after the subscription comes back")
	require.Eventually(t, func() bool { return redistest.NumSub(t, rc, ch) == 1 }, 10*time.Second, 5*time.Millisecond)
	for _, w := range ws {
		require.NoError(t, w.Wait(redistest.Context(t, testTimeout)))
	}
	requireWokenBy(t, rc, ch, "0", func() bool { return woken(ws[0]) }, "messages arrive on the new subscription")
}

// TestBackoffResetsAfterConfirmedSubscription: the delay before subscribing again starts
// from its minimum after every subscription the server confirmed. Without the reset the
// sixth loss in a row would wait 1.6 s. The client does not retry by itself, so that every
// lost connection ends a Receive and goes through the Subscriber's own retry.
func TestBackoffResetsAfterConfirmedSubscription(t *testing.T) {
	srv := redistest.Shared(t)
	rc := srv.Client(t)
	s := newSubscriber(t, srv.Client(t, func(o *rueidis.ClientOption) { o.DisableRetry = true }), Classic)
	ch := channelName()
	w := subscribeN(t, s, ch, 1, LockRule)[0]
	defer w.Close()
	b := subOf(t, s, ch)
	for round := range 6 {
		require.Equal(t, round+1, b.confirmations())
		redistest.KillSubscribers(t, rc)
		lost := time.Now()
		require.Eventually(t, func() bool { return b.confirmations() == round+2 }, 10*time.Second, time.Millisecond,
			"round %d: not subscribed again", round)
		again := time.Since(lost)
		t.Logf("round %d: subscribed again after %v", round, again)
		assert.Less(t, again, time.Second, "round %d: the delay grew across confirmed subscriptions", round)
	}
	require.Eventually(t, func() bool { return redistest.NumSub(t, rc, ch) == 1 }, 5*time.Second, 5*time.Millisecond)
}

// TestSubscribersOnOneClientShareSubscriptions: waiters of Subscriber A come and go on a
// channel while B's waiter waits on it; A's leaving never unsubscribes B, so B's waiter,
// whose Wait has no time bound, is woken by the message.
func TestSubscribersOnOneClientShareSubscriptions(t *testing.T) {
	srv := redistest.Shared(t)
	rc, shared := srv.Client(t), srv.Client(t)
	a, b := newSubscriber(t, shared, Classic), newSubscriber(t, shared, Classic)
	ch := channelName()
	wb := subscribeN(t, b, ch, 1, LockRule)[0]
	defer wb.Close()
	for i := range 50 {
		ctx, cancel := context.WithCancel(redistest.Context(t, testTimeout))
		wa, err := a.Subscribe(ctx, ch, LockRule)
		require.NoError(t, err, "round %d", i)
		cancel()
		assert.ErrorIs(t, wa.Wait(ctx), context.Canceled)
		wa.Close()
		require.Equal(t, int64(1), redistest.NumSub(t, rc, ch), "round %d: one subscription for both Subscribers", i)
	}
	assert.Equal(t, 1, subOf(t, b, ch).confirmations(), "B's subscription was never lost")
	assert.False(t, woken(wb))
	publish(t, rc, ch, "0")
	ctx, cancel := context.WithTimeout(redistest.Context(t, testTimeout), 5*time.Second)
	defer cancel()
	require.NoError(t, wb.Wait(ctx), "B's waiter is woken by the message")
}

// TestClosingOneSubscriberKeepsTheOthers: Close ends its own waiters only; the channel
// stays subscribed for the other Subscriber, and the last user unsubscribes.
func TestClosingOneSubscriberKeepsTheOthers(t *testing.T) {
	srv := redistest.Shared(t)
	rc, shared := srv.Client(t), srv.Client(t)
	a, b := New(shared, Classic), New(shared, Classic)
	ch := channelName()
	wa := subscribeN(t, a, ch, 1, LockRule)[0]
	wb := subscribeN(t, b, ch, 1, LockRule)[0]
	ended := make(chan error, 1)
	go func() { ended <- wa.Wait(context.Background()) }()
	a.Close()
	assert.ErrorIs(t, <-ended, ErrClosed, "A's waiter")
	wa.Close()
	assert.Equal(t, int64(1), redistest.NumSub(t, rc, ch), "B's subscription is kept")
	assert.True(t, registered(shared))

	requireWokenBy(t, rc, ch, "0", func() bool { return woken(wb) }, "B's waiter still hears the channel")
	require.NoError(t, wb.Wait(redistest.Context(t, testTimeout)))
	wb.Close()
	b.Close()
	assert.Zero(t, redistest.NumSub(t, rc, ch), "the last Subscriber's Close has unsubscribed")
	assert.False(t, registered(shared), "nothing is kept for the client")
}

// TestEachSubscriberAppliesTheRule: a message wakes, by the rule, waiters of every
// Subscriber, as it would separate Redisson clients.
func TestEachSubscriberAppliesTheRule(t *testing.T) {
	srv := redistest.Shared(t)
	rc, shared := srv.Client(t), srv.Client(t)
	a, b := newSubscriber(t, shared, Classic), newSubscriber(t, shared, Classic)
	ch := channelName()
	wa := subscribeN(t, a, ch, 2, LockRule)
	defer closeAll(wa)
	wb := subscribeN(t, b, ch, 2, LockRule)
	defer closeAll(wb)
	requireWokenBy(t, rc, ch, "0", func() bool { return woken(wa[0]) && woken(wb[0]) }, "0 wakes one waiter of each")
	assert.Equal(t, []bool{true, false}, wokenSet(wa))
	assert.Equal(t, []bool{true, false}, wokenSet(wb))
}

// TestListenBothKinds: a Subscriber that listens both ways has one subscription of each
// kind per channel; a message of either kind wakes by the rule, so a release published
// both ways wakes two waiters. A Subscriber on the same client that listens one way shares
// that kind's subscription.
func TestListenBothKinds(t *testing.T) {
	srv := redistest.Shared(t)
	rc, shared := srv.Client(t), srv.Client(t)
	redistest.Require(t, rc, redistest.ShardedPubSub)
	both, classic := newSubscriber(t, shared, Classic|Sharded), newSubscriber(t, shared, Classic)
	ch := channelName()
	ws := subscribeN(t, both, ch, 3, LockRule)
	wc := subscribeN(t, classic, ch, 1, LockRule)[0]
	assert.Equal(t, int64(1), redistest.NumSub(t, rc, ch), "one SUBSCRIBE for both Subscribers")
	assert.Equal(t, int64(1), redistest.ShardNumSub(t, rc, ch), "one SSUBSCRIBE")

	spublish := func(msg string) {
		require.NoError(t, rc.Do(context.Background(), rc.B().Spublish().Channel(ch).Message(msg).Build()).Error())
	}
	spublish("0")
	require.Eventually(t, func() bool { return woken(ws[0]) }, 5*time.Second, time.Millisecond, "SPUBLISH wakes")
	assert.Equal(t, []bool{true, false, false}, wokenSet(ws))
	assert.False(t, woken(wc), "the classic Subscriber does not hear SPUBLISH")

	publish(t, rc, ch, "0")
	spublish("0")
	require.Eventually(t, func() bool { return woken(ws[1]) && woken(ws[2]) && woken(wc) }, 5*time.Second, time.Millisecond,
		"a release published both ways wakes two waiters of the Subscriber that listens both ways")

	closeAll(ws)
	require.Eventually(t, func() bool { return redistest.ShardNumSub(t, rc, ch) == 0 }, 5*time.Second, 5*time.Millisecond,
		"the last waiter that listens sharded unsubscribes")
	assert.Equal(t, int64(1), redistest.NumSub(t, rc, ch), "the classic subscription stays for the other Subscriber")
	wc.Close()
	require.Eventually(t, func() bool { return redistest.NumSub(t, rc, ch) == 0 }, 5*time.Second, 5*time.Millisecond)
}

// TestChooseOutsideACluster: on a single server every plan is classic.
func TestChooseOutsideACluster(t *testing.T) {
	t.Run("Choose", func(t *testing.T) {
		rc := redistest.Shared(t).Client(t)
		for _, mode := range []Mode{ModeAuto, ModeSharded, ModeClassic} {
			for _, others := range []Kinds{0, Classic, Sharded, Classic | Sharded} {
				plan, err := Choose(redistest.Context(t, testTimeout), rc, mode, others)
				require.NoError(t, err)
				assert.Equal(t, Plan{Listen: Classic, Publish: Classic}, plan, "mode %d, others %s", mode, others)
			}
		}
	})
	t.Run("PublishCommands", func(t *testing.T) {
		assert.Equal(t, []string{"PUBLISH"}, Classic.PublishCommands())
		assert.Equal(t, []string{"SPUBLISH", "PUBLISH"}, (Classic | Sharded).PublishCommands())
	})
}

// TestSynchronizerRules: the rules of Redisson's CountDownLatchPubSub and SemaphorePubSub.
func TestSynchronizerRules(t *testing.T) {
	assert.Equal(t, WakeAll, LatchRule("0"))
	assert.Equal(t, WakeNone, LatchRule("1"))
	assert.Equal(t, WakeNone, LatchRule("x"))
	assert.Equal(t, WakeN(5), SemaphoreRule("5"))
	assert.Equal(t, WakeNone, SemaphoreRule("0"))
	assert.Equal(t, WakeNone, SemaphoreRule("-2"))
	assert.Equal(t, WakeNone, SemaphoreRule("x"))
}

// A refused subscription is an error at once: the first SUBSCRIBE's from Subscribe, and one
// refused after a lost subscription (the user's channels revoked: the server drops the
// subscription) from the waiter's Wait; a later Subscribe tries again.
func TestRefusedSubscription(t *testing.T) {
	srv := redistest.StartProcess(t, redistest.ProcessOptions{})
	admin := srv.Client(t)
	redistest.ApplyACL(t, admin, []string{"ACL", "SETUSER", "u", "reset", "resetchannels", "on", ">p", "+ping", "+client|tracking",
		"+cluster|slots", "+subscribe", "+unsubscribe", "&allowed:*"})
	rc := srv.Client(t, func(o *rueidis.ClientOption) { o.Username, o.Password = "u", "p" })
	s := newSubscriber(t, rc, Classic)
	ctx := redistest.Context(t, testTimeout)

	_, err := s.Subscribe(ctx, "denied:1", LockRule)
	require.ErrorContains(t, err, "NOPERM")

	w, err := s.Subscribe(ctx, "allowed:1", LockRule)
	require.NoError(t, err)
	defer w.Close()
	redistest.ApplyACL(t, admin, []string{"ACL", "SETUSER", "u", "resetchannels"})
	err = w.Wait(ctx)
	require.ErrorContains(t, err, "NOPERM")
	w.Close()

	redistest.ApplyACL(t, admin, []string{"ACL", "SETUSER", "u", "&allowed:*"})
	w, err = s.Subscribe(ctx, "allowed:1", LockRule)
	require.NoError(t, err, "a later waiter subscribes afresh")
	w.Close()
}
