package rlock_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/goredisson/goredisson/rlock"
)

// A countdown latch opens for every awaiter, Java's and Go's, when the last worker counts
// down.
func ExampleCountDownLatch() {
	locks, done := exampleLocks(rlock.Options{})
	defer done()
	ctx := context.Background()
	latch := locks.NewCountDownLatch("example:latch")
	defer latch.Delete(ctx)
	if _, err := latch.TrySetCount(ctx, 2); err != nil {
		fmt.Println(err)
		return
	}
	for range 2 {
		go func() { _ = latch.CountDown(ctx) }()
	}
	fmt.Println(latch.Await(ctx))
	// Output: <nil>
}

// A semaphore bounds how many callers, Java's and Go's, work at once.
func ExampleSemaphore() {
	locks, done := exampleLocks(rlock.Options{})
	defer done()
	ctx := context.Background()
	sem := locks.NewSemaphore("example:semaphore")
	_, _ = sem.DrainPermits(ctx)
	defer sem.DrainPermits(ctx)
	if err := sem.AddPermits(ctx, 2); err != nil {
		fmt.Println(err)
		return
	}
	if err := sem.Acquire(ctx, 1); err != nil {
		fmt.Println(err)
		return
	}
	defer sem.Release(ctx, 1)
	err := sem.TryAcquire(ctx, 2, 100*time.Millisecond) // only 1 left
	fmt.Println(errors.Is(err, rlock.ErrNoPermits), errors.Is(err, rlock.ErrLocked))
	// Output: true true
}
