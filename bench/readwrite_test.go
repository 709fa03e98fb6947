package bench

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/goredisson/goredisson/internal/redistest"
	"github.com/goredisson/goredisson/internal/redistest/rlocktest"
	"github.com/goredisson/goredisson/rlock"
)

// Sizes of TestReadWriteThroughput.
const (
	rwWorkers = 16              // goroutines per contender, one owner each
	rwBlock   = 2 * time.Second // one measured block of one contender
	rwRounds  = 5               // blocks per contender, the contenders alternating
	rwWarmup  = 300 * time.Millisecond
)

// rwCommand reproduces TestReadWriteThroughput.
const rwCommand = "GOREDISSON_BENCH=1 go test -run TestReadWriteThroughput -v -timeout 10m ./bench/"

// TestReadWriteThroughput measures acquisitions per second with 16 goroutines on one name,
// each its own owner, all on one rlock.Client, each acquisition followed at once by its
// release (the critical section is empty): the read lock of NewReadWriteLock (readers share
// it, so nobody waits), RLock (NewLock: every acquisition but one at a time waits for a
// release), and the write lock of the same read-write lock (exclusive too, with Redisson's
// wake-all write release). The contenders alternate in blocks of rwBlock, rwRounds blocks
// each, so that load drift on the shared machine touches all of them alike; the table gives
// each contender's acquisitions per second over its blocks and the ratios, all from the one
// run. It runs only with GOREDISSON_BENCH=1.
func TestReadWriteThroughput(t *testing.T) {
	if os.Getenv(EnvBench) == "" {
		t.Skip("set " + EnvBench + "=1 to run")
	}
	srv := redistest.Shared(t)
	c := rlocktest.NewClient(t, srv.Client(t), rlock.Options{})
	rw := c.NewReadWriteLock("bench:rw:" + t.Name())
	contenders := []struct {
		name string
		l    *rlock.Lock
	}{
		{"read lock (NewReadWriteLock(name).ReadLock())", rw.ReadLock()},
		{"RLock (NewLock)", c.NewLock("bench:rlock:" + t.Name())},
		{"write lock (NewReadWriteLock(name).WriteLock())", rw.WriteLock()},
	}
	acq := make([]int64, len(contenders))
	spent := make([]time.Duration, len(contenders))
	for _, ct := range contenders {
		runRW(t, ct.l, rwWarmup) // warm-up: connections, scripts cached
	}
	for round := range rwRounds {
		for k := range contenders {
			i := (k + round) % len(contenders) // rotate who goes first
			n := runRW(t, contenders[i].l, rwBlock)
			acq[i] += n
			spent[i] += rwBlock
		}
	}
	var out strings.Builder
	fmt.Fprintf(&out, "\n%s\n\n", rwCommand)
	fmt.Fprintf(&out, "| contender (%d goroutines, one name, one Client) | acquisitions | acq/s | ÷ RLock |\n| --- | ---: | ---: | ---: |\n", rwWorkers)
	rate := func(i int) float64 { return float64(acq[i]) / spent[i].Seconds() }
	for i, ct := range contenders {
		fmt.Fprintf(&out, "| %s | %d | %.0f | %.2f× |\n", ct.name, acq[i], rate(i), rate(i)/rate(1))
	}
	t.Log(out.String())
	for i := range contenders {
		if acq[i] == 0 {
			t.Errorf("%s: no acquisition", contenders[i].name)
		}
	}
}

// runRW has rwWorkers goroutines acquire and release l, each with an owner of its own, for d,
// and returns the acquisitions made.
func runRW(t *testing.T, l *rlock.Lock, d time.Duration) int64 {
	var n atomic.Int64
	var wg sync.WaitGroup
	ctx, cancel := context.WithCancel(context.Background())
	for range rwWorkers {
		wg.Go(func() {
			owner := rlock.NewOwner(context.Background())
			for ctx.Err() == nil {
				if err := l.Lock(owner); err != nil {
					t.Error(err)
					return
				}
				if err := l.Unlock(owner); err != nil {
					t.Error(err)
					return
				}
				n.Add(1)
			}
		})
	}
	time.Sleep(d) // the measured block
	cancel()
	wg.Wait()
	return n.Load()
}
