package rlock

import (
	"context"
	"encoding/binary"
	"encoding/hex"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/redis/rueidis"

	"github.com/goredisson/goredisson/internal/keys"
)

// latchLinger is how long the sweeper gathers unlock latches before deleting them in one
// pipelined round trip, and latchQueue the most it holds.
const (
	latchLinger = 50 * time.Millisecond
	latchQueue  = 4096
)

// latchSweeper deletes unlock latches once their unlock has returned, off the caller's path,
// as Redisson does with a fire-and-forget DEL. Latches are gathered for latchLinger and
// deleted together by a timer goroutine, so an unlock wakes no goroutine: outside a cluster
// with one DEL on a dedicated connection, so that the deletes never share (and slow) the
// connection of lock calls; in a cluster with one DEL per latch, routed by slot. A latch it
// cannot delete (queue full, Redis unreachable) expires with its TTL.
type latchSweeper struct {
	rc rueidis.Client

	mu     sync.Mutex
	keys   []string
	timer  *time.Timer // armed while keys wait
	closed bool
	wg     sync.WaitGroup // running deletes
}

func newLatchSweeper(rc rueidis.Client) *latchSweeper { return &latchSweeper{rc: rc} }

// add queues a latch key for deletion without blocking.
func (s *latchSweeper) add(key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed || len(s.keys) >= latchQueue {
		return
	}
	s.keys = append(s.keys, key)
	if s.timer == nil {
		s.wg.Add(1)
		s.timer = time.AfterFunc(latchLinger, func() {
			defer s.wg.Done()
			s.delete(s.take())
		})
	}
}

// take empties the queue and disarms the timer.
func (s *latchSweeper) take() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	keys := s.keys
	s.keys, s.timer = nil, nil
	return keys
}

func (s *latchSweeper) delete(keys []string) {
	if len(keys) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if s.rc.Mode() == rueidis.ClientModeCluster {
		// Latches of different locks live in different slots: let the client route them.
		cmds := make(rueidis.Commands, len(keys))
		for i, k := range keys {
			cmds[i] = s.rc.B().Del().Key(k).Build()
		}
		s.rc.DoMulti(ctx, cmds...)
		return
	}
	s.rc.Dedicated(func(dc rueidis.DedicatedClient) error {
		dc.Do(ctx, dc.B().Del().Key(keys...).Build()) // one slot space: one DEL for all
		return nil
	})
}

// close deletes the latches still queued and waits for running deletes.
func (s *latchSweeper) close() {
	s.mu.Lock()
	s.closed = true
	if s.timer != nil && s.timer.Stop() {
		s.wg.Done() // its function will not run
	}
	keys := s.keys
	s.keys, s.timer = nil, nil
	s.mu.Unlock()
	s.delete(keys)
	s.wg.Wait()
}

// newLatch returns the unlock latch key of a new request on lock name, in one allocation:
// its request id is 16 random bytes as 32 lowercase hex characters, the form of Redisson's
// unlock request ids. The bytes come from math/rand/v2's generator (ChaCha8, seeded by the
// runtime from the system's entropy): an id must not collide with another request's, and
// need not be secret, so the system call of crypto/rand (a microsecond per unlock) is
// spared.
func newLatch(name string) string {
	var b [16]byte
	var id [32]byte
	binary.LittleEndian.PutUint64(b[:8], rand.Uint64())
	binary.LittleEndian.PutUint64(b[8:], rand.Uint64())
	hex.Encode(id[:], b[:])
	return keys.UnlockLatch(name, string(id[:]))
}
