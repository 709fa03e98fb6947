package rlock

import (
	"sync"
	"sync/atomic"
	"time"
)

// workerIdle is how long a worker goroutine waits for its next function before it ends.
const workerIdle = time.Second

// workers runs functions on goroutines that, after each, wait up to workerIdle for the
// next. A group's requests to its members' servers go out at once, one goroutine each;
// reusing goroutines whose stacks have already grown to what a request needs saves starting
// and growing a new one per request, which on a busy machine is a measurable part of a
// group's round trip. The zero value is not usable: see newWorkers.
type workers struct {
	tasks   chan func()
	quit    chan struct{}
	wg      sync.WaitGroup
	started atomic.Int64 // workers started so far
}

func newWorkers() *workers {
	return &workers{tasks: make(chan func()), quit: make(chan struct{})}
}

// run runs f on an idle worker, or on a new one when none is idle. It must not be called
// after (or concurrently with) close.
func (w *workers) run(f func()) {
	select {
	case w.tasks <- f:
	default:
		w.wg.Add(1)
		w.started.Add(1)
		go w.work(f)
	}
}

// work runs f, then the functions handed to it, until it has been idle for workerIdle or
// the workers are closed.
func (w *workers) work(f func()) {
	defer w.wg.Done()
	idle := time.NewTimer(workerIdle)
	defer idle.Stop()
	for {
		f()
		idle.Reset(workerIdle)
		select {
		case f = <-w.tasks:
		case <-idle.C:
			return
		case <-w.quit:
			return
		}
	}
}

// close ends the idle workers and waits for those still running a function.
func (w *workers) close() {
	close(w.quit)
	w.wg.Wait()
}
