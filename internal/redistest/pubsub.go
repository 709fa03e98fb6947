package redistest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/rueidis"
)

// Listen subscribes a client of its own to channel and returns the messages published on it.
// It returns once the server has confirmed the subscription; the subscription ends in
// t.Cleanup.
func (s *Server) Listen(t testing.TB, channel string) <-chan string {
	t.Helper()
	rc := s.Client(t)
	msgs := make(chan string, 64)
	subscribed := make(chan struct{})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	t.Cleanup(func() { cancel(); <-done })
	go func() {
		defer close(done)
		var once sync.Once
		hctx := rueidis.WithOnSubscriptionHook(ctx, func(rueidis.PubSubSubscription) {
			once.Do(func() { close(subscribed) })
		})
		rc.Receive(hctx, rc.B().Subscribe().Channel(channel).Build(), func(m rueidis.PubSubMessage) {
			msgs <- m.Message
		})
	}()
	<-subscribed
	return msgs
}

var markers atomic.Int64

// Published returns the messages that msgs (the channel [Server.Listen] returned for
// channel) delivers before a marker that it publishes on channel through rc: every message
// published on channel by a command that returned before the call, in order, and no later
// one. It fails the test when the marker does not arrive within 10 s. Use it to check what
// was published, and that nothing else was, without waiting for silence.
func Published(t testing.TB, rc rueidis.Client, channel string, msgs <-chan string) []string {
	t.Helper()
	marker := fmt.Sprintf("redistest:marker:%d", markers.Add(1))
	Do(t, rc, rc.B().Publish().Channel(channel).Message(marker).Build())
	timeout := time.After(readTimeout)
	var out []string
	for {
		select {
		case m := <-msgs:
			if m == marker {
				return out
			}
			out = append(out, m)
		case <-timeout:
			t.Fatalf("redistest: marker %q not received on %s within %v (before it: %q)", marker, channel, readTimeout, out)
			return nil
		}
	}
}

// KillSubscribed closes, on the server behind rc, every client connection subscribed to at
// least one channel, classic or sharded (with RESP3 a subscribed connection is not of CLIENT
// KILL's type pubsub, so connections are found by their sub= and ssub= counts), and returns
// how many it closed. A connection it cannot kill (one that closed meanwhile, say) is not
// counted, and its error is returned after the others are killed.
func KillSubscribed(ctx context.Context, rc rueidis.Client) (int, error) {
	list, err := rc.Do(ctx, rc.B().ClientList().Build()).ToString()
	if err != nil {
		return 0, fmt.Errorf("CLIENT LIST: %w", err)
	}
	killed := 0
	var errs []error
	for _, c := range ParseClientList(list) {
		if !c.Subscribed() {
			continue
		}
		if err := rc.Do(ctx, rc.B().ClientKill().Id(c.ID).Build()).Error(); err != nil {
			errs = append(errs, fmt.Errorf("CLIENT KILL ID %d: %w", c.ID, err))
			continue
		}
		killed++
	}
	return killed, errors.Join(errs...)
}

// KillSubscribers is [KillSubscribed] for a test that needs a subscription cut: it fails
// the test on an error or when no connection was subscribed.
func KillSubscribers(t testing.TB, rc rueidis.Client) {
	t.Helper()
	killed, err := KillSubscribed(context.Background(), rc)
	if err != nil {
		t.Fatalf("redistest: %v", err)
	}
	if killed == 0 {
		t.Fatalf("redistest: no subscribed connection to kill")
	}
}
