package integration

import (
	"context"
	"fmt"
	"maps"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/goredisson/goredisson/internal/redistest"
	"github.com/goredisson/goredisson/rlock"
)

// TestInteropMutualExclusion is interop scenario 1: 8 Go owners and 8 Java owners contend
// for one lock, and each increments a shared counter non-atomically (GET, then SET) inside
// it, 200 rounds each. The final count must be exact, and an overlap detector must see at
// most one holder inside at any time.
func TestInteropMutualExclusion(t *testing.T) {
	forEachVersion(t, func(t *testing.T, v string) {
		e := newEnv(t, v, 0) // default 30 s watchdog: a lost wake-up shows as a ~30 s stall
		// 200 rounds each (3200 critical sections) take about 23-29 s per version under
		// -race on 2 cores, within the ~60 s budget, so the full count is kept.
		const goOwners, javaOwners, rounds = 8, 8, 200
		const name, counter = "interop1:lock", "interop1:counter"
		d := &overlapDetector{e: e, rc: e.rc, name: name, marker: "inside:" + name}
		r := runMutualExclusion(t, d, counter, "J", goOwners, javaOwners, rounds)
		t.Logf("mutual exclusion: %d critical sections (%d Go, %d Java) in %v, longest acquire Go %v, Java %v",
			r.sections[0]+r.sections[1], r.sections[0], r.sections[1], r.elapsed.Round(time.Millisecond),
			r.maxWait[0].Round(time.Millisecond), r.maxWait[1].Round(time.Millisecond))
	})
}

// mutexRun is what runMutualExclusion measured; index 0 is Go, 1 is Java.
type mutexRun struct {
	sections [2]int64         // critical sections completed
	maxWait  [2]time.Duration // longest acquire
	elapsed  time.Duration
	counter  int64 // the counter's final value
}

// runMutualExclusion is the body of interop scenario 1, shared by TestInteropMutualExclusion
// and, on a cluster, clusterEnv.testMutualExclusion: goOwners Go owners (each a new owner of
// the Go client) and javaOwners Java owners (peer owners javaPrefix0, javaPrefix1, ...) take
// lock d.name rounds times each and, inside it, increment counter non-atomically under d's
// watch. It asserts that no worker failed, that d saw no overlap, that the counter and the
// section counts are exact and that the lock is left free, and returns what it measured.
func runMutualExclusion(t *testing.T, d *overlapDetector, counter, javaPrefix string, goOwners, javaOwners, rounds int) mutexRun {
	t.Helper()
	e, name := d.e, d.name
	ctx, cancel := context.WithCancel(e.ctx)
	defer cancel()
	var (
		wg       sync.WaitGroup
		errMu    sync.Mutex
		errs     []error
		maxWait  [2]atomic.Int64 // longest acquire, ns: [0] Go, [1] Java
		sections [2]atomic.Int64
		failWork = func(err error) { errMu.Lock(); errs = append(errs, err); errMu.Unlock(); cancel() }
		noteWait = func(i int, d time.Duration) {
			for {
				old := maxWait[i].Load()
				if int64(d) <= old || maxWait[i].CompareAndSwap(old, int64(d)) {
					return
				}
			}
		}
	)
	start := time.Now()
	for i := range goOwners {
		g := e.goSide(name)
		who, field := fmt.Sprintf("go-%d", i), g.Field(t)
		octx := rlock.WithOwner(ctx, mustOwner(g.ctx))
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := range rounds {
				begin := time.Now()
				if err := g.l.Lock(octx); err != nil {
					failWork(fmt.Errorf("%s round %d: Lock: %w", who, r, err))
					return
				}
				noteWait(0, time.Since(begin))
				err := d.section(ctx, who, field, func() error { return goIncr(ctx, e.rc, counter) })
				if uerr := g.l.Unlock(octx); err == nil && uerr != nil {
					err = fmt.Errorf("Unlock: %w", uerr)
				}
				if err != nil {
					failWork(fmt.Errorf("%s round %d: %w", who, r, err))
					return
				}
				sections[0].Add(1)
			}
		}()
	}
	for i := range javaOwners {
		owner := fmt.Sprintf("%s%d", javaPrefix, i)
		who, field := "java-"+owner, e.javaField(owner)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := range rounds {
				if err := javaRound(ctx, e, d, owner, who, field, name, counter, noteWait); err != nil {
					failWork(fmt.Errorf("%s round %d: %w", who, r, err))
					return
				}
				sections[1].Add(1)
			}
		}()
	}
	wg.Wait()
	run := mutexRun{
		sections: [2]int64{sections[0].Load(), sections[1].Load()},
		maxWait:  [2]time.Duration{time.Duration(maxWait[0].Load()), time.Duration(maxWait[1].Load())},
		elapsed:  time.Since(start),
	}
	for _, err := range errs {
		t.Error(err)
	}
	d.report(t)
	var err error
	run.counter, err = e.rc.Do(e.ctx, e.rc.B().Get().Key(counter).Build()).AsInt64()
	require.NoError(t, err)
	assert.Equal(t, int64((goOwners+javaOwners)*rounds), run.counter, "%s: non-atomic counter lost increments: critical sections overlapped", name)
	assert.Equal(t, int64(goOwners*rounds), run.sections[0], "%s: Go critical sections", name)
	assert.Equal(t, int64(javaOwners*rounds), run.sections[1], "%s: Java critical sections", name)
	assert.Empty(t, e.hgetall(name), "%s: lock left held", name)
	return run
}

// javaRound is one round of a Java owner: lock, critical section (the peer's non-atomic incr
// with a 1 ms sleep between GET and SET), unlock.
func javaRound(ctx context.Context, e *env, d *overlapDetector, owner, who, field, name, counter string,
	noteWait func(int, time.Duration)) error {
	r, err := e.peer.Do(ctx, owner, "lock", name)
	if err != nil {
		return fmt.Errorf("lock: %w", err)
	}
	if !r.Bool() {
		return fmt.Errorf("lock: %v", r)
	}
	noteWait(1, r.Elapsed)
	err = d.section(ctx, who, field, func() error {
		r, err := e.peer.Do(ctx, owner, "incr", counter, "1")
		if err == nil && !r.OK {
			err = fmt.Errorf("incr: %v", r)
		}
		return err
	})
	r, uerr := e.peer.Do(ctx, owner, "unlock", name)
	switch {
	case err != nil:
		return err
	case uerr != nil:
		return fmt.Errorf("unlock: %w", uerr)
	case !r.OK:
		return fmt.Errorf("unlock: %v", r)
	}
	return nil
}

// goIncr is the Go critical section: GET, a 1 ms pause that widens the window in which an
// overlapping holder's increment would be lost, then SET value+1.
func goIncr(ctx context.Context, rc rueidis.Client, key string) error {
	n, err := rc.Do(ctx, rc.B().Get().Key(key).Build()).AsInt64()
	if err != nil && !rueidis.IsRedisNil(err) {
		return fmt.Errorf("GET %s: %w", key, err)
	}
	time.Sleep(time.Millisecond)
	return rc.Do(ctx, rc.B().Set().Key(key).Value(strconv.FormatInt(n+1, 10)).Build()).Error()
}

func mustOwner(ctx context.Context) rlock.Owner {
	o, ok := rlock.OwnerFrom(ctx)
	if !ok {
		panic("no owner in ctx")
	}
	return o
}

// overlapDetector checks that at most one holder, Go or Java, is inside the critical section
// at a time. Every section is bracketed by the Go code that drives it: for a Go owner
// between its Lock and Unlock, for a Java owner between the peer's lock reply and the unlock
// request, so each bracket lies within the holder's real hold. It uses three independent
// signals:
//
//   - an in-process count of holders inside;
//   - a Redis-side marker: SET inside:<name> <who> NX on entry must succeed, and the marker
//     must still be the holder's own on exit, where it is deleted;
//   - the lock hash on entry must be exactly {holder's field: 1}.
//
// The non-atomic counter (lost increments) is the fourth, checked by the test.
type overlapDetector struct {
	e            *env
	rc           rueidis.Client
	name, marker string

	inside     redistest.Overlap
	violations atomic.Int64
	mu         sync.Mutex
	first      []string // the first violations, for the report
}

func (d *overlapDetector) violation(format string, args ...any) {
	d.violations.Add(1)
	d.mu.Lock()
	defer d.mu.Unlock()
	if len(d.first) < 10 {
		d.first = append(d.first, fmt.Sprintf(format, args...))
	}
}

// section runs work as holder who (hash field field), checking for overlaps around it. It
// returns work's error or a Redis transport error; overlaps are recorded, not returned.
func (d *overlapDetector) section(ctx context.Context, who, field string, work func() error) error {
	others, leave := d.inside.Enter()
	if others != 0 {
		d.violation("%s entered with %d other holder(s) inside (in-process count)", who, others)
	}
	defer leave()
	err := d.rc.Do(ctx, d.rc.B().Set().Key(d.marker).Value(who).Nx().Build()).Error()
	switch {
	case rueidis.IsRedisNil(err):
		other, _ := d.rc.Do(ctx, d.rc.B().Get().Key(d.marker).Build()).ToString()
		d.violation("%s entered while Redis marker says %q is inside", who, other)
	case err != nil:
		return fmt.Errorf("SET %s NX: %w", d.marker, err)
	}
	hash, err := d.rc.Do(ctx, d.rc.B().Hgetall().Key(d.name).Build()).AsStrMap()
	if err != nil {
		return fmt.Errorf("HGETALL %s: %w", d.name, err)
	}
	if want := map[string]string{field: "1"}; !maps.Equal(hash, want) {
		d.violation("%s entered while the lock hash is %v, want %v", who, hash, want)
	}
	if err := work(); err != nil {
		return err
	}
	got, err := d.rc.Do(ctx, d.rc.B().Get().Key(d.marker).Build()).ToString()
	if err != nil && !rueidis.IsRedisNil(err) {
		return fmt.Errorf("GET %s: %w", d.marker, err)
	}
	if got != who {
		d.violation("%s leaving, but Redis marker says %q", who, got)
	}
	if err := d.rc.Do(ctx, d.rc.B().Del().Key(d.marker).Build()).Error(); err != nil {
		return fmt.Errorf("DEL %s: %w", d.marker, err)
	}
	return nil
}

func (d *overlapDetector) report(t *testing.T) {
	t.Helper()
	d.mu.Lock()
	defer d.mu.Unlock()
	assert.Zero(t, d.violations.Load(), "overlapping critical sections, first ones: %q", d.first)
}
