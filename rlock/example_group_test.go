package rlock_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/goredisson/goredisson/rlock"
)

// A MultiLock takes several locks, here an order and a stock item, all or none, in order, as
// Java's RedissonMultiLock does; Java code holding either lock excludes it.
func ExampleMultiLock() {
	locks, done := exampleLocks(rlock.Options{})
	defer done()
	both, err := rlock.NewMultiLock(locks.NewLock("example:order:1"), locks.NewLock("example:stock:7"))
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx := rlock.NewOwner(context.Background())
	if err := both.TryLock(ctx, time.Second, 0); err != nil {
		fmt.Println(err)
		return
	}
	defer both.Unlock(ctx)

	other := rlock.NewOwner(context.Background())
	err = locks.NewLock("example:stock:7").TryLock(other, 0, 0)
	fmt.Println(errors.Is(err, rlock.ErrLocked))
	// Output: true
}

// A RedLock holds a lock once a majority of independent servers granted it, and reports how
// long that majority is known to last. In production each lock comes from a Client of its
// own Redis server (rlock.New on a rueidis client per server) with one name; this example
// has one server, so it uses three names on it.
func ExampleRedLock() {
	locks, done := exampleLocks(rlock.Options{})
	defer done()
	red, err := rlock.NewRedLock(locks.NewLock("example:red:a"), locks.NewLock("example:red:b"),
		locks.NewLock("example:red:c"))
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx := rlock.NewOwner(context.Background())
	validity, err := red.TryLock(ctx, time.Second, 10*time.Second)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer red.Unlock(ctx)
	fmt.Println(red.Quorum(), validity > 9*time.Second && validity <= 10*time.Second)

	held, stop, err := red.Held(ctx) // ends when the majority is lost
	if err != nil {
		fmt.Println(err)
		return
	}
	defer stop()
	fmt.Println(held.Err())
	// Output:
	// 2 true
	// <nil>
}
