package rlock_test

import (
	"context"
	"fmt"

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
