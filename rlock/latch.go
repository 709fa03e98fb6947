package rlock

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"sync"
	"time"

	"github.com/redis/rueidis"
)

// latchBatch is the most unlock latches deleted in one pipelined round trip.
const latchBatch = 256

// latchSweeper deletes unlock latches once their unlock has returned, off the caller's path,
// as Redisson does with a fire-and-forget DEL. A latch it cannot delete (queue full, Redis
// unreachable) expires with its TTL.
type latchSweeper struct {
	rc    rueidis.Client
	queue chan string
	stop  chan struct{}
	done  chan struct{}
	once  sync.Once
}

func newLatchSweeper(rc rueidis.Client) *latchSweeper {
	s := &latchSweeper{rc: rc, queue: make(chan string, 4096), stop: make(chan struct{}), done: make(chan struct{})}
	go s.run()
	return s
}

// add queues a latch key for deletion without blocking.
func (s *latchSweeper) add(key string) {
	select {
	case s.queue <- key:
	default:
	}
}

func (s *latchSweeper) run() {
	defer close(s.done)
	for {
		select {
		case <-s.stop:
			return
		case key := <-s.queue:
			cmds := rueidis.Commands{s.rc.B().Del().Key(key).Build()}
			for len(cmds) < latchBatch && len(s.queue) > 0 {
				cmds = append(cmds, s.rc.B().Del().Key(<-s.queue).Build())
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			s.rc.DoMulti(ctx, cmds...)
			cancel()
		}
	}
}

func (s *latchSweeper) close() {
	s.once.Do(func() { close(s.stop) })
	<-s.done
}

// newRequestID returns 16 random bytes as 32 lowercase hex characters, the form of
// Redisson's unlock request ids.
func newRequestID() string {
	var b [16]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
