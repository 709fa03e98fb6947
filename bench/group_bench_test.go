package bench

import (
	"context"
	"testing"

	"github.com/goredisson/goredisson/internal/redistest"
	"github.com/goredisson/goredisson/internal/redistest/rlocktest"
	"github.com/goredisson/goredisson/rlock"
)

// BenchmarkGroupUncontended is one goroutine taking and releasing a group of five locks on
// five servers, each through a Client of its own, with no other owner: RedLock and
// MultiLock Lock + Unlock, and the floor (rlock's acquire script sent to the five servers
// at once, then its release script, raw). Each reports cpu-ns/op (reportCPU) besides.
func BenchmarkGroupUncontended(b *testing.B) {
	srvs := make([]*redistest.Server, grpServers)
	for i := range srvs {
		srvs[i] = redistest.StartProcess(b, redistest.ProcessOptions{})
	}
	members := func(b *testing.B) []*rlock.Lock {
		name := benchName(b)
		var ls []*rlock.Lock
		for _, srv := range srvs {
			ls = append(ls, rlocktest.NewClient(b, srv.Client(b), rlock.Options{}).NewLock(name))
		}
		return ls
	}
	b.Run("RedLock", func(b *testing.B) {
		r, err := rlock.NewRedLock(members(b)...)
		if err != nil {
			b.Fatal(err)
		}
		ctx := rlock.NewOwner(context.Background())
		defer reportCPU(b, cpuTime(b))
		for b.Loop() {
			if _, err := r.Lock(ctx); err != nil {
				b.Fatal(err)
			}
			if err := r.Unlock(ctx); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("MultiLock", func(b *testing.B) {
		m, err := rlock.NewMultiLock(members(b)...)
		if err != nil {
			b.Fatal(err)
		}
		ctx := rlock.NewOwner(context.Background())
		defer reportCPU(b, cpuTime(b))
		for b.Loop() {
			if err := m.Lock(ctx); err != nil {
				b.Fatal(err)
			}
			if err := m.Unlock(ctx); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("raw-floor", func(b *testing.B) {
		op := rawGroupOp(b, srvs)
		ctx := context.Background()
		defer reportCPU(b, cpuTime(b))
		for b.Loop() {
			op(ctx)
		}
	})
}
