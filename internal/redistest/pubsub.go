package redistest

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"testing"

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

// KillSubscribers closes, on the server behind rc, every client connection subscribed to
// at least one channel (with RESP3 a subscribed connection is not of CLIENT KILL's type
// pubsub, so connections are found by their sub= count). It fails the test when none is.
func KillSubscribers(t testing.TB, rc rueidis.Client) {
	t.Helper()
	ctx := context.Background()
	list, err := rc.Do(ctx, rc.B().ClientList().Build()).ToString()
	if err != nil {
		t.Fatalf("redistest: CLIENT LIST: %v", err)
	}
	killed := 0
	for _, line := range strings.Split(strings.TrimSpace(list), "\n") {
		var id int64
		subscribed := false
		for _, f := range strings.Fields(line) {
			if v, ok := strings.CutPrefix(f, "id="); ok {
				id, _ = strconv.ParseInt(v, 10, 64)
			}
			if v, ok := strings.CutPrefix(f, "sub="); ok && v != "0" {
				subscribed = true
			}
			if v, ok := strings.CutPrefix(f, "ssub="); ok && v != "0" {
				subscribed = true
			}
		}
		if subscribed {
			if err := rc.Do(ctx, rc.B().ClientKill().Id(id).Build()).Error(); err != nil {
				t.Fatalf("redistest: CLIENT KILL ID %d: %v", id, err)
			}
			killed++
		}
	}
	if killed == 0 {
		t.Fatalf("redistest: no subscribed connection to kill")
	}
}
