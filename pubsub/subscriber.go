package pubsub

import (
	"context"
	"sync"
	"time"

	"github.com/redis/rueidis"

	"github.com/goredisson/goredisson/internal/backoff"
)

// unsubscribeTimeout bounds the UNSUBSCRIBE sent when the last waiter of a channel leaves.
const unsubscribeTimeout = 5 * time.Second

// Subscriber shares subscriptions among waiters. It is safe for concurrent use. The zero
// value is not usable: create one with New and end it with Close.
type Subscriber struct {
	client  rueidis.Client
	sharded bool

	mu       sync.Mutex
	entries  map[string]*entry // channel → live subscription
	draining map[string]*entry // channel → subscription still unsubscribing
	closed   bool
	closing  chan struct{}
	wg       sync.WaitGroup
}

// New returns a Subscriber that subscribes through client, with SSUBSCRIBE when sharded is
// true and SUBSCRIBE otherwise. The Subscriber never closes client.
func New(client rueidis.Client, sharded bool) *Subscriber {
	return &Subscriber{
		client:   client,
		sharded:  sharded,
		entries:  make(map[string]*entry),
		draining: make(map[string]*entry),
		closing:  make(chan struct{}),
	}
}

// Subscribe registers a waiter on channel and returns once the server has confirmed the
// channel's subscription, so that no release published after Subscribe returns is missed.
// Waiters on one channel are served in the order of their Subscribe calls.
//
// It returns ctx.Err() when ctx ends first, the subscription error when the first attempt to
// subscribe fails, or ErrClosed. On error nothing stays registered. On success the caller
// must Close the Waiter.
func (s *Subscriber) Subscribe(ctx context.Context, channel string) (*Waiter, error) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil, ErrClosed
	}
	e := s.entries[channel]
	if e == nil {
		e = s.start(channel)
	}
	e.refs++
	w := &Waiter{s: s, e: e, wake: make(chan struct{}, 1)}
	e.add(w)
	s.mu.Unlock()

	select {
	case <-e.ready:
		if e.err != nil {
			w.Close()
			return nil, e.err
		}
		return w, nil
	case <-ctx.Done():
		w.Close()
		return nil, ctx.Err()
	case <-s.closing:
		w.Close()
		return nil, ErrClosed
	}
}

// Channels returns the channels that currently have a subscription open or closing.
func (s *Subscriber) Channels() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]string, 0, len(s.entries)+len(s.draining))
	for ch := range s.entries {
		out = append(out, ch)
	}
	for ch := range s.draining {
		if s.entries[ch] == nil {
			out = append(out, ch)
		}
	}
	return out
}

// Close ends every subscription, makes pending and later calls return ErrClosed, and returns
// once every goroutine of the Subscriber has stopped. It is idempotent.
func (s *Subscriber) Close() {
	s.mu.Lock()
	if !s.closed {
		s.closed = true
		close(s.closing)
		for _, e := range s.entries {
			e.cancel()
		}
	}
	s.mu.Unlock()
	s.wg.Wait()
}

// start creates the entry of channel and its receive goroutine. Called with s.mu held.
func (s *Subscriber) start(channel string) *entry {
	ctx, cancel := context.WithCancel(context.Background())
	e := &entry{
		channel: channel,
		ctx:     ctx,
		cancel:  cancel,
		ready:   make(chan struct{}),
		done:    make(chan struct{}),
	}
	prev := s.draining[channel]
	s.entries[channel] = e
	s.wg.Add(1)
	go s.run(e, prev)
	return e
}

// release drops one reference to e; the last one ends its subscription.
func (s *Subscriber) release(e *entry) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e.refs--
	if e.refs > 0 {
		return
	}
	if s.entries[e.channel] == e {
		delete(s.entries, e.channel)
	}
	s.draining[e.channel] = e
	e.cancel()
}

// run keeps e subscribed until e.ctx ends. A new subscription to the same channel starts
// only after the previous one has been unsubscribed, so that the previous UNSUBSCRIBE can
// never remove it.
func (s *Subscriber) run(e *entry, prev *entry) {
	defer s.wg.Done()
	defer func() {
		s.mu.Lock()
		if s.draining[e.channel] == e {
			delete(s.draining, e.channel)
		}
		s.mu.Unlock()
		close(e.done)
	}()
	if prev != nil {
		select {
		case <-prev.done:
		case <-e.ctx.Done():
			return
		}
	}
	retry := backoff.New(50*time.Millisecond, 2*time.Second)
	for {
		err := s.receive(e)
		if e.ctx.Err() != nil {
			return
		}
		if !e.confirmed() {
			e.fail(err)
			return
		}
		// The subscription ended while waiters remain: the connection was lost or the
		// server dropped the channel (slot migration). Messages may have been missed.
		e.wakeAll()
		if !retry.Wait(e.ctx) {
			return
		}
	}
}

// receive runs one subscription until it ends, and unsubscribes on the same connection when
// it ends because e.ctx was cancelled.
func (s *Subscriber) receive(e *entry) error {
	cmd := s.client.B().Subscribe().Channel(e.channel).Build()
	if s.sharded {
		cmd = s.client.B().Ssubscribe().Channel(e.channel).Build()
	}
	ctx := rueidis.WithOnSubscriptionHook(e.ctx, e.onSubscription)
	ctx = rueidis.WithOnReceiveReturnHook(ctx, func(err error, c rueidis.CommandClient) error {
		if e.ctx.Err() == nil {
			return err
		}
		uctx, cancel := context.WithTimeout(context.Background(), unsubscribeTimeout)
		defer cancel()
		unsub := c.B().Unsubscribe().Channel(e.channel).Build()
		if s.sharded {
			unsub = c.B().Sunsubscribe().Channel(e.channel).Build()
		}
		c.Do(uctx, unsub)
		return err
	})
	return s.client.Receive(ctx, cmd, e.onMessage)
}

// Waiting returns the number of local waiters on channel that are blocked in Wait now.
func (s *Subscriber) Waiting(channel string) int {
	s.mu.Lock()
	e := s.entries[channel]
	s.mu.Unlock()
	if e == nil {
		return 0
	}
	return int(e.waiting.Load())
}
