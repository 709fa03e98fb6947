package rlock

import (
	"testing"
)

// BenchmarkLockUnlock is one owner taking and releasing one lock, uncontended, with the
// watchdog: the cost of the path every caller pays, allocations included.
func BenchmarkLockUnlock(b *testing.B) {
	f := newFixture(b, Options{})
	for b.Loop() {
		if err := f.l.Lock(f.ctx); err != nil {
			b.Fatal(err)
		}
		if err := f.l.Unlock(f.ctx); err != nil {
			b.Fatal(err)
		}
	}
}
