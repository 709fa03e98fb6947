package bench

import (
	"context"
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync/atomic"
	"testing"

	"github.com/goredisson/goredisson/internal/redistest"
)

// BenchmarkThroughput is TestCompare's throughput workload as a Go benchmark, for
// -benchmem, -cpuprofile and CPU time per op side by side (cpu-ns/op: this process's, the
// harness and every simulated process included; redis-cpu-ns/op: the server's, from INFO
// cpu): thrWorkers goroutines spread over thrProcs simulated processes (each its own
// rueidis client and lock-library instance) take and release random names out of thrNames,
// with an empty critical section. One op is one acquire + release; allocations per op
// include the harness's own (the deadline context, the owner, the release closure).
//
// Sub-benchmarks: rlock with each lock call under a thrDeadline context (cancelable, so the
// path of a server request; TestCompare's workload) and with context.Background (the owner
// only); rlock's two scripts sent raw, a refused acquire sent again at once (the protocol's
// floor, TestCompare's "raw" row); rueidislock as in TestCompare.
func BenchmarkThroughput(b *testing.B) {
	srv := redistest.Shared(b)
	for _, tc := range []struct {
		name     string
		newProc  func(testing.TB, *redistest.Server, string) proc
		deadline bool
	}{
		{"rlock/deadline-ctx", newRlockProc(false), true},
		{"rlock/background-ctx", newRlockProc(false), false},
		{"raw-scripts/deadline-ctx", newRawRlockProc, true},
		{"rueidislock/deadline-ctx", newRueidislockProc, true},
	} {
		b.Run(tc.name, func(b *testing.B) {
			var procs []proc
			for i := range thrProcs {
				procs = append(procs, tc.newProc(b, srv, procName("bench-thr", i)))
			}
			names := make([]string, thrNames)
			for i := range names {
				names[i] = fmt.Sprintf("%s:%d", benchName(b), i)
			}
			var g atomic.Int64
			b.SetParallelism(max(thrWorkers/runtime.GOMAXPROCS(0), 1)) // thrWorkers goroutines
			ctl := srv.Client(b)
			b.ResetTimer()
			cpu0, srvCPU0 := cpuTime(b), serverCPU(b, ctl)
			b.RunParallel(func(pb *testing.PB) {
				n := g.Add(1)
				p := procs[n%thrProcs]
				rng := rand.New(rand.NewPCG(uint64(n), 1))
				for pb.Next() {
					ctx, cancel := context.Background(), context.CancelFunc(func() {})
					if tc.deadline {
						ctx, cancel = context.WithTimeout(ctx, thrDeadline)
					}
					rel, err := p.lock(ctx, names[rng.IntN(thrNames)])
					if err == nil {
						err = rel()
					}
					cancel()
					if err != nil {
						b.Error(err)
						return
					}
				}
			})
			b.StopTimer()
			reportCPU(b, cpu0)
			reportPerOp(b, serverCPU(b, ctl)-srvCPU0, "redis-cpu-ns/op")
		})
	}
}
