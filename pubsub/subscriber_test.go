package pubsub

import (
	"context"
	"fmt"
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

func ctxFor(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// numsub returns the number of server-side subscribers of channel.
func numsub(t *testing.T, rc rueidis.Client, channel string) int64 {
	m, err := rc.Do(context.Background(), rc.B().PubsubNumsub().Channel(channel).Build()).AsIntMap()
	require.NoError(t, err)
	return m[channel]
}

func publish(t *testing.T, rc rueidis.Client, channel, msg string) {
	require.NoError(t, rc.Do(context.Background(), rc.B().Publish().Channel(channel).Message(msg).Build()).Error())
}

func woken(w *Waiter) bool { return len(w.wake) == 1 }

func subscribeN(t *testing.T, s *Subscriber, channel string, n int) []*Waiter {
	ws := make([]*Waiter, n)
	for i := range ws {
		w, err := s.Subscribe(ctxFor(t), channel)
		require.NoError(t, err)
		ws[i] = w
	}
	return ws
}

func TestOneSubscriptionSharedByWaiters(t *testing.T) { // RL-01, RL-02
	srv := redistest.Shared(t)
	rc := srv.Client(t)
	s := New(srv.Client(t), false)
	defer s.Close()
	ch := channelName()
	ws := subscribeN(t, s, ch, 20)
	assert.Equal(t, int64(1), numsub(t, rc, ch), "20 waiters share one subscription")
	for _, w := range ws {
		w.Close()
	}
	require.Eventually(t, func() bool { return numsub(t, rc, ch) == 0 }, 5*time.Second, 5*time.Millisecond,
		"the last waiter's Close unsubscribes")
	require.Eventually(t, func() bool { return len(s.Channels()) == 0 }, 5*time.Second, 5*time.Millisecond)
	chans, err := rc.Do(context.Background(), rc.B().PubsubChannels().Pattern(ch).Build()).AsStrSlice()
	require.NoError(t, err)
	assert.Empty(t, chans)
}

func TestResubscribeAfterUnsubscribeRace(t *testing.T) {
	srv := redistest.Shared(t)
	rc := srv.Client(t)
	s := New(srv.Client(t), false)
	defer s.Close()
	ch := channelName()
	for range 50 { // the next subscription starts while the previous one is unsubscribing
		w := subscribeN(t, s, ch, 1)[0]
		assert.Equal(t, int64(1), numsub(t, rc, ch))
		w.Close()
	}
	require.Eventually(t, func() bool { return numsub(t, rc, ch) == 0 }, 5*time.Second, 5*time.Millisecond)
}

func TestWakeRules(t *testing.T) {
	srv := redistest.Shared(t)
	rc := srv.Client(t)
	s := New(srv.Client(t), false)
	defer s.Close()
	ch := channelName()
	ws := subscribeN(t, s, ch, 3)
	defer func() {
		for _, w := range ws {
			w.Close()
		}
	}()

	publish(t, rc, ch, "7") // ignored
	publish(t, rc, ch, "0") // wakes the first to arrive
	require.Eventually(t, func() bool { return woken(ws[0]) }, 5*time.Second, time.Millisecond)
	assert.False(t, woken(ws[1]))
	assert.False(t, woken(ws[2]))

	publish(t, rc, ch, "0") // the first has a wake-up pending: the next one is woken
	require.Eventually(t, func() bool { return woken(ws[1]) }, 5*time.Second, time.Millisecond)
	assert.False(t, woken(ws[2]))

	require.NoError(t, ws[0].Wait(ctxFor(t), -1), "a pending wake-up is consumed at once")
	assert.False(t, woken(ws[0]))

	publish(t, rc, ch, "1") // wakes all
	require.Eventually(t, func() bool { return woken(ws[0]) && woken(ws[1]) && woken(ws[2]) },
		5*time.Second, time.Millisecond)
}

func TestCloseHandsPendingWakeToNext(t *testing.T) {
	srv := redistest.Shared(t)
	rc := srv.Client(t)
	s := New(srv.Client(t), false)
	defer s.Close()
	ch := channelName()
	ws := subscribeN(t, s, ch, 2)
	defer ws[1].Close()
	publish(t, rc, ch, "0")
	require.Eventually(t, func() bool { return woken(ws[0]) }, 5*time.Second, time.Millisecond)
	ws[0].Close() // leaves without consuming its wake-up
	assert.True(t, woken(ws[1]), "the wake-up is not lost")
}

func TestWaitBounds(t *testing.T) {
	srv := redistest.Shared(t)
	s := New(srv.Client(t), false)
	defer s.Close()
	w := subscribeN(t, s, channelName(), 1)[0]
	defer w.Close()

	start := time.Now()
	require.NoError(t, w.Wait(ctxFor(t), 50*time.Millisecond), "the time bound ends the wait")
	assert.GreaterOrEqual(t, time.Since(start), 50*time.Millisecond)

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
	defer cancel()
	assert.ErrorIs(t, w.Wait(ctx, -1), context.DeadlineExceeded)
}

func TestCancelledSubscribeLeavesNothing(t *testing.T) {
	srv := redistest.Shared(t)
	rc := srv.Client(t)
	s := New(srv.Client(t), false)
	defer s.Close()
	ch := channelName()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := s.Subscribe(ctx, ch)
	assert.ErrorIs(t, err, context.Canceled)
	require.Eventually(t, func() bool { return len(s.Channels()) == 0 && numsub(t, rc, ch) == 0 },
		5*time.Second, 5*time.Millisecond)
}

func TestCloseEndsWaits(t *testing.T) {
	srv := redistest.Shared(t)
	s := New(srv.Client(t), false)
	w := subscribeN(t, s, channelName(), 1)[0]
	done := make(chan error, 1)
	go func() { done <- w.Wait(context.Background(), -1) }()
	s.Close()
	assert.ErrorIs(t, <-done, ErrClosed)
	w.Close()
	_, err := s.Subscribe(ctxFor(t), channelName())
	assert.ErrorIs(t, err, ErrClosed)
}

func TestReconnectResubscribesAndWakesAll(t *testing.T) { // F6
	srv := redistest.Shared(t)
	rc := srv.Client(t)
	src := srv.Client(t)
	s := New(src, false)
	defer s.Close()
	ch := channelName()
	ws := subscribeN(t, s, ch, 2)
	defer func() {
		for _, w := range ws {
			w.Close()
		}
	}()
	redistest.KillSubscribers(t, rc)
	require.Eventually(t, func() bool { return woken(ws[0]) && woken(ws[1]) }, 10*time.Second, time.Millisecond,
		"every waiter is woken to re-check after the subscription comes back")
	require.Eventually(t, func() bool { return numsub(t, rc, ch) == 1 }, 10*time.Second, 5*time.Millisecond)
	for _, w := range ws {
		require.NoError(t, w.Wait(ctxFor(t), -1))
	}
	publish(t, rc, ch, "0")
	require.Eventually(t, func() bool { return woken(ws[0]) }, 5*time.Second, time.Millisecond,
		"messages arrive on the new subscription")
}
