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

// exampleLocks connects to the Redis of REDIS_URL and returns a Client and a cleanup.
func exampleLocks(opts rlock.Options) (*rlock.Client, func()) {
	opt, err := rueidis.ParseURL(os.Getenv("REDIS_URL"))
	if err != nil {
		panic(err)
	}
	rc, err := rueidis.NewClient(opt)
	if err != nil {
		panic(err)
	}
	c, err := rlock.New(context.Background(), rc, opts)
	if err != nil {
		panic(err)
	}
	return c, func() { c.Close(); rc.Close() }
}

// TryLock waits a bounded time; ErrLocked says another owner kept the lock meanwhile.
func ExampleLock_TryLock() {
	locks, done := exampleLocks(rlock.Options{})
	defer done()
	l := locks.NewLock("example:trylock")
	holder := rlock.NewOwner(context.Background())
	_ = l.Lock(holder)
	defer l.Unlock(holder)

	other := rlock.NewOwner(context.Background())
	err := l.TryLock(other, 100*time.Millisecond, 10*time.Second) // wait ≤ 100 ms, lease 10 s
	fmt.Println(errors.Is(err, rlock.ErrLocked))
	// Output: true
}

// LockFor takes an explicit lease: no watchdog, the lock ends by Unlock or with the lease.
func ExampleLock_LockFor() {
	locks, done := exampleLocks(rlock.Options{})
	defer done()
	l := locks.NewLock("example:lease")
	ctx := rlock.NewOwner(context.Background())
	if err := l.LockFor(ctx, 2*time.Second); err != nil {
		fmt.Println(err)
		return
	}
	ttl, _ := l.RemainTTL(ctx)
	fmt.Println(ttl > time.Second && ttl <= 2*time.Second)
	_ = l.Unlock(ctx)
	// Output: true
}

// Held gives a context to do the work with: it ends if the lock is lost, here because
// another client force-unlocks it.
func ExampleLock_Held() {
	locks, done := exampleLocks(rlock.Options{WatchdogTimeout: 3 * time.Second})
	defer done()
	admin, done2 := exampleLocks(rlock.Options{})
	defer done2()
	l := locks.NewLock("example:held")
	ctx := rlock.NewOwner(context.Background())
	_ = l.Lock(ctx)
	work, stop, _ := l.Held(ctx)
	defer stop()

	forced := admin.NewLock("example:held")
	_, _ = forced.ForceUnlock(context.Background())

	<-work.Done() // within one renewal interval (1 s here)
	fmt.Println(errors.Is(context.Cause(work), rlock.ErrLockLost))
	fmt.Println(errors.Is(l.Unlock(ctx), rlock.ErrNotHeld))
	// Output:
	// true
	// true
}

// An owner can be handed to another goroutine: it then acts as the same holder.
func ExampleWithOwner() {
	locks, done := exampleLocks(rlock.Options{})
	defer done()
	l := locks.NewLock("example:handoff")
	ctx := rlock.NewOwner(context.Background())
	_ = l.Lock(ctx)

	owner, _ := rlock.OwnerFrom(ctx)
	released := make(chan error)
	go func() {
		released <- l.Unlock(rlock.WithOwner(context.Background(), owner))
	}()
	fmt.Println(<-released)
	// Output: <nil>
}

// ForceUnlock frees a lock whoever holds it, Java or Go, and wakes its waiters.
func ExampleLock_ForceUnlock() {
	locks, done := exampleLocks(rlock.Options{})
	defer done()
	l := locks.NewLock("example:force")
	_ = l.Lock(rlock.NewOwner(context.Background()))
	existed, err := l.ForceUnlock(context.Background())
	fmt.Println(existed, err)
	// Output: true <nil>
}

// Do runs a function under the lock: it mints an owner when ctx has none, passes the Held
// context, and releases afterwards, even on panic. The error joins fn's and the release's.
func ExampleLock_Do() {
	locks, done := exampleLocks(rlock.Options{HoldWarning: 30 * time.Second})
	defer done()
	stock := locks.NewLock("example:stock:42")
	err := stock.Do(context.Background(), func(ctx context.Context) error {
		fmt.Println("deducting stock") // ctx ends if the lock is lost
		return ctx.Err()
	})
	fmt.Println(err)
	// Output:
	// deducting stock
	// <nil>
}

// TryDo bounds the wait: fn does not run when another owner keeps the lock meanwhile.
func ExampleLock_TryDo() {
	locks, done := exampleLocks(rlock.Options{})
	defer done()
	report := locks.NewLock("example:report")
	holder := rlock.NewOwner(context.Background())
	_ = report.Lock(holder)
	defer report.Unlock(holder)

	err := report.TryDo(context.Background(), 100*time.Millisecond, func(ctx context.Context) error {
		fmt.Println("not printed: another owner holds the report lock")
		return nil
	})
	fmt.Println(errors.Is(err, rlock.ErrLocked))
	// Output: true
}

// A fenced lock issues a token with every acquisition; the resource it guards keeps the
// largest token it has accepted and refuses writes with a smaller one, so a holder that
// was paused past its lease cannot overwrite the work of the next holder.
func ExampleFencedLock() {
	locks, done := exampleLocks(rlock.Options{})
	defer done()
	ctx := rlock.NewOwner(context.Background())

	var accepted int64 // the resource's side: the largest token seen so far
	write := func(token int64) bool {
		if token < accepted {
			return false
		}
		accepted = token
		return true
	}

	orders := locks.NewFencedLock("order:42")
	token, err := orders.Lock(ctx) // err == nil ⇔ you hold it; send token with every write
	if err != nil {
		fmt.Println(err)
		return
	}
	_ = orders.Unlock(ctx)
	next, _ := orders.Lock(ctx)
	defer orders.Unlock(ctx)
	fmt.Println(next > token, write(next), write(token))
	// Output: true true false
}

// Do passes the acquisition's token to the work done under a fenced lock.
func ExampleFencedLock_Do() {
	locks, done := exampleLocks(rlock.Options{})
	defer done()
	l := locks.NewFencedLock("example:fenced:do")
	err := l.Do(context.Background(), func(ctx context.Context, token int64) error {
		fmt.Println(token > 0) // send token with every write to the guarded resource
		return ctx.Err()
	})
	fmt.Println(err)
	// Output:
	// true
	// <nil>
}

// A non-reentrant lock refuses a second acquisition by its holder at once, as Redisson's
// does, instead of counting it.
func ExampleClient_NewNonReentrantLock() {
	locks, done := exampleLocks(rlock.Options{})
	defer done()
	job := locks.NewNonReentrantLock("example:job")
	ctx := rlock.NewOwner(context.Background())
	fmt.Println(job.Lock(ctx))
	fmt.Println(errors.Is(job.Lock(ctx), rlock.ErrReentry))
	fmt.Println(job.Unlock(ctx))
	// Output:
	// <nil>
	// true
	// <nil>
}

// A spin lock waits by polling with a growing back-off instead of pub/sub, for servers where
// pub/sub is unavailable; the zero SpinBackoff is Redisson's (1 ms doubling to 128 ms).
func ExampleClient_NewSpinLock() {
	locks, done := exampleLocks(rlock.Options{})
	defer done()
	l := locks.NewSpinLock("example:spin", rlock.SpinBackoff{})
	holder := rlock.NewOwner(context.Background())
	_ = l.Lock(holder)

	waiter := rlock.NewOwner(context.Background())
	acquired := make(chan error)
	go func() { acquired <- l.TryLock(waiter, 5*time.Second, 0) }()
	_ = l.Unlock(holder)
	fmt.Println(<-acquired) // at the waiter's next attempt, within 128 ms
	_ = l.Unlock(waiter)
	// Output: <nil>
}

// A fair lock grants the lock to its waiters in the order they started waiting, Go's and
// Java's alike (Redisson's getFairLock); a release wakes the first waiter only.
func ExampleClient_NewFairLock() {
	locks, done := exampleLocks(rlock.Options{})
	defer done()
	queue := locks.NewFairLock("example:fair")
	first := rlock.NewOwner(context.Background())
	fmt.Println(queue.Lock(first))

	second := rlock.NewOwner(context.Background())
	fmt.Println(errors.Is(queue.TryLock(second, 0, 0), rlock.ErrLocked)) // one attempt: it never queues
	acquired := make(chan error)
	go func() { acquired <- queue.Lock(second) }() // queues, and sleeps on its own channel
	fmt.Println(queue.Unlock(first))               // wakes the first waiter in the queue
	fmt.Println(<-acquired)
	fmt.Println(queue.Unlock(second))
	// Output:
	// <nil>
	// true
	// <nil>
	// <nil>
	// <nil>
}
