package rlock

import (
	"runtime"
	"sync"
	"testing"
	"time"
)

// TestWorkersReuseGoroutines: functions handed out one after another run on workers already
// started, functions that overlap get a worker each, and close ends the idle workers.
func TestWorkersReuseGoroutines(t *testing.T) {
	before := runtime.NumGoroutine()
	w := newWorkers()
	ran := 0
	for range 100 {
		done := make(chan struct{})
		w.run(func() { ran++; close(done) }, nil)
		<-done
	}
	// A function handed out while the last worker is still on its way back to waiting
	// starts another: a few may, not one per function.
	if ran != 100 || w.started.Load() > 50 {
		t.Fatalf("ran %d functions on %d workers, want 100 on at most 50", ran, w.started.Load())
	}

	release := make(chan struct{})
	var running sync.WaitGroup
	running.Add(4)
	for range 4 { // each blocks until released: four at once need four workers
		w.run(func() { running.Done(); <-release }, nil)
	}
	running.Wait()
	if n := w.started.Load(); n < 4 {
		t.Fatalf("4 blocked functions ran on %d workers", n)
	}
	close(release)

	w.close()
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > before {
		if time.Now().After(deadline) {
			t.Fatalf("%d goroutines after close, %d before the workers", runtime.NumGoroutine(), before)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestWorkersEndWhenIdle: a worker with nothing to run ends about workerIdle after its last
// function, without close.
func TestWorkersEndWhenIdle(t *testing.T) {
	w := newWorkers()
	defer w.close()
	done := make(chan struct{})
	w.run(func() { close(done) }, nil)
	<-done
	start := time.Now()
	ended := make(chan struct{})
	go func() { w.wg.Wait(); close(ended) }()
	select {
	case <-ended:
		if d := time.Since(start); d < workerIdle/2 {
			t.Fatalf("worker ended %v after its function, want about %v", d, workerIdle)
		}
	case <-time.After(10 * workerIdle):
		t.Fatal("idle worker did not end")
	}
}
