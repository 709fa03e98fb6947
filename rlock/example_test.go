package rlock_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/redis/rueidis"

	"github.com/goredisson/goredisson/rlock"
)

// Example connects to the Redis of REDIS_URL, then locks an order and works under the
// lock (see lockOrder).
func Example() {
	ctx := context.Background()
	opt, err := rlock.ParseRedisURL(os.Getenv("REDIS_URL")) // e.g. 127.0.0.1:6379
	if err != nil {
		fmt.Println(err)
		return
	}
	rc, err := rueidis.NewClient(opt)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer rc.Close()
	locks, err := rlock.New(ctx, rc, rlock.Options{}) // Redisson's defaults: 30 s watchdog
	if err != nil {
		fmt.Println(err)
		return
	}
	defer locks.Close()

	fmt.Println(lockOrder(ctx, locks))
	// Output:
	// working on order 42
	// <nil>
}

// lockOrder is what a request handler does: mint an owner for the task, lock, work, unlock.
func lockOrder(ctx context.Context, locks *rlock.Client) error {
	order := locks.NewLock("order:42") // the Redis key, as Java's getLock("order:42")
	ctx = rlock.NewOwner(ctx)          // who holds it: this task
	if err := order.Lock(ctx); err != nil {
		return err // waits until free or ctx ends; err == nil ⇔ you hold it
	}
	defer order.Unlock(ctx)

	work, stop, err := order.Held(ctx) // cancelled if the lock is ever lost
	if err != nil {
		return err
	}
	defer stop()
	return chargeOrder(work, 42)
}

func chargeOrder(ctx context.Context, id int) error {
	fmt.Println("working on order", id)
	return ctx.Err()
}

// Reentrancy: the same owner re-enters (each Lock needs its Unlock); another owner waits,
// or with TryLock and no wait gets ErrLocked at once. Errors name the call and the lock.
func Example_reentrancy() {
	locks, done := exampleLocks(rlock.Options{})
	defer done()
	order := locks.NewLock("example:reentrancy")
	ctx := rlock.NewOwner(context.Background())
	_ = order.Lock(ctx)
	_ = order.Lock(ctx) // the same owner re-enters
	n, _ := order.HoldCount(ctx)
	fmt.Println("hold count:", n)

	other := rlock.NewOwner(context.Background())
	err := order.TryLock(other, 0, 0)
	fmt.Println(errors.Is(err, rlock.ErrLocked), err)

	_ = order.Unlock(ctx)
	_ = order.Unlock(ctx)
	locked, _ := order.IsLocked(ctx)
	fmt.Println("locked:", locked)
	// Output:
	// hold count: 2
	// true rlock: TryLock "example:reentrancy": held by another owner
	// locked: false
}

// Errors match the package's sentinels with errors.Is, and name the call and the lock.
func Example_errors() {
	locks, done := exampleLocks(rlock.Options{})
	defer done()
	report := locks.NewLock("example:errors")
	holder := rlock.NewOwner(context.Background())
	_ = report.Lock(holder)
	defer report.Unlock(holder)

	ctx := rlock.NewOwner(context.Background())
	err := report.TryLock(ctx, 100*time.Millisecond, 0)
	switch {
	case err == nil:
		defer report.Unlock(ctx) // held: released when the function returns
		fmt.Println("got it")
	case errors.Is(err, rlock.ErrLocked):
		fmt.Println("busy:", err) // another owner kept it for the whole wait
	default:
		fmt.Println(err) // ctx ended, Redis unreachable, bad input: nothing is held
	}
	// Output: busy: rlock: TryLock "example:errors": held by another owner
}
