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
	tasks   chan task
	quit    chan struct{}
	wg      sync.WaitGroup
	started atomic.Int64 // workers started so far
}

func newWorkers() *workers {
	return &workers{tasks: make(chan task), quit: make(chan struct{})}
}

// task is a function for a worker, and the WaitGroup (nil: none) marked Done after it.
type task struct {
	f    func()
	done *sync.WaitGroup
}

// do runs t.f, then marks t.done Done.
func (t task) do() {
	if t.done != nil {
		defer t.done.Done()
	}
	t.f()
}

// run runs f on an idle worker, or on a new one when none is idle, and then marks done
// Done unless it is nil. It must not be called after (or concurrently with) close.
func (w *workers) run(f func(), done *sync.WaitGroup) {
	t := task{f, done}
	select {
	case w.tasks <- t:
	default:
		w.wg.Add(1)
		w.started.Add(1)
		go w.work(t)
	}
}

// work runs t, then the tasks handed to it, until it has been idle for workerIdle or the
// workers are closed.
func (w *workers) work(t task) {
	defer w.wg.Done()
	idle := time.NewTimer(workerIdle)
	defer idle.Stop()
	for {
		t.do()
		idle.Reset(workerIdle)
		select {
		case t = <-w.tasks:
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
