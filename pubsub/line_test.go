package pubsub

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/goredisson/goredisson/internal/redistest"
)

// subscribeAll subscribes one waiter on each of channels, all at once, and returns them in
// the order of channels; errs[i] is the error of channels[i].
func subscribeAll(t *testing.T, s *Subscriber, channels []string) (ws []*Waiter, errs []error) {
	ws, errs = make([]*Waiter, len(channels)), make([]error, len(channels))
	var wg sync.WaitGroup
	for i, ch := range channels {
		wg.Go(func() { ws[i], errs[i] = s.Subscribe(redistest.Context(t, testTimeout), ch, LockRule) })
	}
	wg.Wait()
	return ws, errs
}

// subscribeFresh subscribes one waiter on each of n channels no other test uses, all at
// once, and returns the channels, their waiters and how many goroutines the waits added.
func subscribeFresh(t *testing.T, s *Subscriber, n int) (channels []string, ws []*Waiter, added int) {
	channels = make([]string, n)
	for i := range channels {
		channels[i] = channelName()
	}
	before := runtime.NumGoroutine()
	ws, errs := subscribeAll(t, s, channels)
	t.Cleanup(func() { closeAll(ws) })
	for i, err := range errs {
		require.NoError(t, err, channels[i])
	}
	return channels, ws, runtime.NumGoroutine() - before
}

// Waiters that arrive together on many channels are subscribed in few commands, and a
// waiting channel adds no goroutine: the line's one goroutine sends them all.
func TestManyChannelsFewCommands(t *testing.T) {
	const n = 2000
	srv := redistest.StartProcess(t, redistest.ProcessOptions{})
	rc := srv.Client(t)
	s := newSubscriber(t, srv.Client(t), Classic)
	channels, ws, added := subscribeFresh(t, s, n)
	defer closeAll(ws)
	subscribes := redistest.Calls(t, rc, "subscribe")
	t.Logf("%d channels: %d SUBSCRIBE commands, %d goroutines added", n, subscribes, added)
	assert.Less(t, subscribes, int64(n/2), "subscriptions made together share commands")
	assert.Less(t, added, n/10, "a waiting channel costs no goroutine")
	for _, i := range []int{0, n / 2, n - 1} {
		requireWokenBy(t, rc, channels[i], "0", func() bool { return woken(ws[i]) }, "a message reaches its waiter")
	}
	closeAll(ws)
	require.Eventually(t, func() bool { return idle(s) }, 10*time.Second, time.Millisecond)
	for _, ch := range []string{channels[0], channels[n-1]} {
		assert.Zero(t, redistest.NumSub(t, rc, ch), "unsubscribed once its waiter left")
	}
}

// A channel the server refuses, sent with others, fails alone: the others are subscribed.
func TestRefusedChannelAmongOthers(t *testing.T) {
	srv := redistest.StartProcess(t, redistest.ProcessOptions{})
	admin := srv.Client(t)
	redistest.ApplyACL(t, admin, []string{"ACL", "SETUSER", "u", "reset", "resetchannels", "on", ">p", "+ping", "+client|tracking",
		"+subscribe", "+unsubscribe", "&allowed:*"})
	s := newSubscriber(t, srv.Client(t, func(o *rueidis.ClientOption) { o.Username, o.Password = "u", "p" }), Classic)
	var channels []string
	for i := range 200 {
		if i%50 == 25 {
			channels = append(channels, fmt.Sprintf("denied:%d", i))
		} else {
			channels = append(channels, fmt.Sprintf("allowed:%d", i))
		}
	}
	for round := range 3 {
		ws, errs := subscribeAll(t, s, channels)
		for i, ch := range channels {
			if ch[0] == 'd' {
				assert.ErrorContains(t, errs[i], "NOPERM", "round %d: %s", round, ch)
				assert.Nil(t, ws[i])
			} else if assert.NoError(t, errs[i], "round %d: %s", round, ch) {
				assert.Equal(t, int64(1), redistest.NumSub(t, admin, ch), "round %d: %s", round, ch)
			}
		}
		for _, w := range ws {
			if w != nil {
				w.Close()
			}
		}
		require.Eventually(t, func() bool { return idle(s) }, 10*time.Second, time.Millisecond)
	}
}

// The last Subscriber's Close ends its subscriptions on the server.
func TestLastCloseUnsubscribes(t *testing.T) {
	srv := redistest.StartProcess(t, redistest.ProcessOptions{})
	rc := srv.Client(t)
	sc := srv.Client(t)
	s := New(sc, Classic)
	channels := []string{channelName(), channelName(), channelName()}
	ws, errs := subscribeAll(t, s, channels)
	for _, err := range errs {
		require.NoError(t, err)
	}
	s.Close()
	for _, ch := range channels {
		require.Eventually(t, func() bool { return redistest.NumSub(t, rc, ch) == 0 }, 5*time.Second, time.Millisecond, ch)
	}
	assert.False(t, registered(sc))
	closeAll(ws)
}

// A client that speaks RESP2 (AlwaysRESP2) allows nothing but subscription commands on a
// subscribed connection: its waiters subscribe, are woken, and are subscribed again after
// the connection is lost, as on RESP3.
func TestRESP2Client(t *testing.T) {
	srv := redistest.Shared(t)
	rc := srv.Client(t)
	s := newSubscriber(t, srv.Client(t, func(o *rueidis.ClientOption) { o.AlwaysRESP2, o.DisableCache = true, true }), Classic)
	channels := []string{channelName(), channelName(), channelName()}
	ws, errs := subscribeAll(t, s, channels)
	defer closeAll(ws)
	for _, err := range errs {
		require.NoError(t, err)
	}
	requireWokenBy(t, rc, channels[1], "0", func() bool { return woken(ws[1]) }, "a message reaches its waiter")
	require.NoError(t, ws[1].Wait(redistest.Context(t, testTimeout)))
	redistest.KillSubscribers(t, rc)
	require.Eventually(t, func() bool { return woken(ws[0]) && woken(ws[1]) && woken(ws[2]) }, 10*time.Second, time.Millisecond,
		"every waiter is woken once subscribed again")
	for _, w := range ws {
		require.NoError(t, w.Wait(redistest.Context(t, testTimeout)))
	}
	requireWokenBy(t, rc, channels[1], "0", func() bool { return woken(ws[1]) }, "messages arrive on the new connection")
	closeAll(ws)
	require.Eventually(t, func() bool { return idle(s) }, 10*time.Second, time.Millisecond)
	assert.Zero(t, redistest.NumSub(t, rc, channels[0]))
}

// A line names its connection ConnectionName, and keeps the name that the application gave
// its connections (rueidis.ClientOption.ClientName).
func TestLineConnectionName(t *testing.T) {
	srv := redistest.StartProcess(t, redistest.ProcessOptions{})
	admin := srv.Client(t)
	subscribed := func() []string { // the names of the connections with subscriptions
		list, err := admin.Do(context.Background(), admin.B().ClientList().TypePubsub().Build()).ToString()
		require.NoError(t, err)
		var names []string
		for _, line := range strings.Split(strings.TrimSpace(list), "\n") {
			for _, field := range strings.Fields(line) {
				if name, ok := strings.CutPrefix(field, "name="); ok {
					names = append(names, name)
				}
			}
		}
		return names
	}
	s := newSubscriber(t, srv.Client(t), Classic)
	defer closeAll(subscribeN(t, s, channelName(), 1, LockRule))
	assert.Equal(t, []string{ConnectionName}, subscribed())

	named := newSubscriber(t, srv.Client(t, func(o *rueidis.ClientOption) { o.ClientName = "orders-api-7" }), Classic)
	defer closeAll(subscribeN(t, named, channelName(), 1, LockRule))
	assert.ElementsMatch(t, []string{ConnectionName, "orders-api-7"}, subscribed())
}
