package rlock_test

import (
	"context"
	"fmt"
	"sync"

	"github.com/goredisson/goredisson/rlock"
)

// A read-write lock (Java's getReadWriteLock): readers share it, a writer has it alone.
// Here two readers hold it at once while a writer's TryLock finds it taken; once both
// readers leave, the writer gets it.
func ExampleReadWriteLock() {
	locks, done := exampleLocks(rlock.Options{})
	defer done()
	doc := locks.NewReadWriteLock("example:doc:7")

	var inside sync.WaitGroup
	inside.Add(2)
	release := make(chan struct{})
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() {
			err := doc.ReadLock().Do(context.Background(), func(ctx context.Context) error {
				inside.Done()
				<-release // both readers are inside together
				return nil
			})
			if err != nil {
				fmt.Println(err)
			}
		})
	}
	inside.Wait()
	writer := rlock.NewOwner(context.Background())
	fmt.Println("writer while reading:", doc.WriteLock().TryLock(writer, 0, 0))
	close(release)
	wg.Wait()
	fmt.Println("writer after the readers:", doc.WriteLock().TryLock(writer, 0, 0))
	_ = doc.WriteLock().Unlock(writer)
	// Output:
	// writer while reading: rlock: TryLock "example:doc:7": held by another owner
	// writer after the readers: <nil>
}
