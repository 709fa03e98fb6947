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

// BenchmarkReplicaSyncLockUnlock is BenchmarkLockUnlock on a master with one replica and
// replica sync on: each Lock and each Unlock waits for the replica (WAIT), the acquisition
// through its master's batch (alone here), the release on a connection of its own.
func BenchmarkReplicaSyncLockUnlock(b *testing.B) {
	p := startReplicated(b)
	f := newFixtureOn(b, p.master, Options{ReplicaSync: ReplicaSyncOn})
	for b.Loop() {
		if err := f.l.Lock(f.ctx); err != nil {
			b.Fatal(err)
		}
		if err := f.l.Unlock(f.ctx); err != nil {
			b.Fatal(err)
		}
	}
}
