package rlock

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"sync"
	"time"

	"github.com/redis/rueidis"
)

// latchBatch is the most unlock latches deleted in one pipelined round trip, and
// latchLinger how long the sweeper gathers latches before deleting them.
const (
	latchBatch  = 256
	latchLinger = 5 * time.Millisecond
)

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
			s.flush()
			return
		case key := <-s.queue:
			s.delete(s.gather(key))
		}
	}
}

// gather collects latches for latchLinger after the first one, up to latchBatch.
func (s *latchSweeper) gather(first string) rueidis.Commands {
	cmds := rueidis.Commands{s.rc.B().Del().Key(first).Build()}
	linger := time.NewTimer(latchLinger)
	defer linger.Stop()
	for len(cmds) < latchBatch {
		select {
		case key := <-s.queue:
			cmds = append(cmds, s.rc.B().Del().Key(key).Build())
		case <-linger.C:
			return cmds
		case <-s.stop:
			return cmds
		}
	}
	return cmds
}

// flush deletes the latches still queued when the sweeper stops.
func (s *latchSweeper) flush() {
	for {
		var cmds rueidis.Commands
		for len(cmds) < latchBatch && len(s.queue) > 0 {
			cmds = append(cmds, s.rc.B().Del().Key(<-s.queue).Build())
		}
		if len(cmds) == 0 {
			return
		}
		s.delete(cmds)
	}
}

func (s *latchSweeper) delete(cmds rueidis.Commands) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	s.rc.DoMulti(ctx, cmds...)
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
