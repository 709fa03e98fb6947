package rlock_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/goredisson/goredisson/rlock"
)

// A permit-expirable semaphore hands out named permits with a lease: a caller that dies
// holding one does not keep it past its lease. Java's RPermitExpirableSemaphore of the same
// name shares the permits and their ids.
func ExampleExpirableSemaphore() {
	locks, done := exampleLocks(rlock.Options{})
	defer done()
	ctx := context.Background()
	sem := locks.NewExpirableSemaphore("example:quota")
	defer sem.Delete(ctx)
	if _, err := sem.TrySetPermits(ctx, 1); err != nil {
		fmt.Println(err)
		return
	}
	ids, err := sem.Acquire(ctx, 1, 200*time.Millisecond) // then forgotten: never released
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(len(ids[0]), "hex digits")

	// Nobody releases it: this waiter takes the permit once its lease has run out.
	again, err := sem.TryAcquire(ctx, 1, 10*time.Second, time.Minute)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(sem.Release(ctx, again...))
	fmt.Println(errors.Is(sem.Release(ctx, ids[0]), rlock.ErrPermitNotHeld))
	// Output:
	// 32 hex digits
	// <nil>
	// true
}
