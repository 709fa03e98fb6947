package rlock_test

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/redis/rueidis"

	"github.com/goredisson/goredisson/rlock"
)

// Example locks an order, re-enters the lock, and releases it. It needs a Redis server at
// REDIS_ADDR (127.0.0.1:6379 by default).
func Example() {
	addr := os.Getenv("REDIS_ADDR")
	if addr == "" {
		addr = "127.0.0.1:6379"
	}
	rc, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{addr}})
	if err != nil {
		fmt.Println("no redis:", err)
		return
	}
	defer rc.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	locks, err := rlock.New(ctx, rc, rlock.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer locks.Close()
	order := locks.NewLock("order:42")

	ctx = rlock.NewOwner(ctx)
	if err := order.Lock(ctx); err != nil { // watchdog lease: held until Unlock
		fmt.Println(err)
		return
	}
	_ = order.Lock(ctx) // the same owner re-enters
	n, _ := order.HoldCount(ctx)
	fmt.Println("hold count:", n)

	other := rlock.NewOwner(context.Background())
	fmt.Println("other owner:", order.TryLock(other, 0, 0))

	_ = order.Unlock(ctx)
	_ = order.Unlock(ctx)
	locked, _ := order.IsLocked(ctx)
	fmt.Println("locked:", locked)
	// Output:
	// hold count: 2
	// other owner: rlock: TryLock "order:42": held by another owner
	// locked: false
}
