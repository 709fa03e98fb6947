package bench

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/goredisson/goredisson/internal/keys"
	"github.com/goredisson/goredisson/internal/redistest"
	"github.com/goredisson/goredisson/internal/redistest/rlocktest"
	"github.com/goredisson/goredisson/lua"
	"github.com/goredisson/goredisson/rlock"
)

var benchSeq int

// benchName returns a lock name of its own for each run of a benchmark function.
func benchName(b *testing.B) string {
	benchSeq++
	return fmt.Sprintf("bench:%s:%d", b.Name(), benchSeq)
}

// BenchmarkUncontendedLockUnlock is one goroutine taking and releasing one lock, with no
// other client: Lock (watchdog: the hold is registered with the renewal wheel) + Unlock, and
// TryLock(wait 0, lease 30 s) + Unlock. Each op is two script calls (acquire, release; the
// release of the last hold writes no unlock latch, so nothing follows it). The owner's ctx
// is context.Background, or in the "cancelable ctx" variant a ctx with a Done channel: the
// acquire script runs on the caller's goroutine either way, under a context detached from
// the cancellation (so that a hold taken after ctx ended can be given back).
func BenchmarkUncontendedLockUnlock(b *testing.B) {
	srv := redistest.Shared(b)
	cases := []struct {
		name string
		ctx  func() (context.Context, context.CancelFunc)
		take func(ctx context.Context, l *rlock.Lock) error
	}{
		{"Lock/watchdog", background, func(ctx context.Context, l *rlock.Lock) error { return l.Lock(ctx) }},
		{"Lock/watchdog/cancelable-ctx", cancelable, func(ctx context.Context, l *rlock.Lock) error { return l.Lock(ctx) }},
		{"TryLock/lease", background, func(ctx context.Context, l *rlock.Lock) error { return l.TryLock(ctx, 0, 30*time.Second) }},
	}
	for _, tc := range cases {
		b.Run(tc.name, func(b *testing.B) {
			c := rlocktest.NewClient(b, srv.Client(b), rlock.Options{})
			l := c.NewLock(benchName(b))
			base, cancel := tc.ctx()
			defer cancel()
			ctx := rlock.NewOwner(base)
			for b.Loop() {
				if err := tc.take(ctx, l); err != nil {
					b.Fatal(err)
				}
				if err := l.Unlock(ctx); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func background() (context.Context, context.CancelFunc) {
	return context.Background(), func() {}
}

func cancelable() (context.Context, context.CancelFunc) {
	return context.WithCancel(context.Background())
}

// trivial is the cheapest script: the floor of one script round trip.
var trivial = rueidis.NewLuaScript(`return 1`)

// BenchmarkRawEvalshaRoundTrip is the floor of a Lock+Unlock pair: two sequential EVALSHA
// of a trivial script on one key through rueidis.
func BenchmarkRawEvalshaRoundTrip(b *testing.B) {
	rc := redistest.Shared(b).Client(b)
	ctx := context.Background()
	keys, args := []string{benchName(b)}, []string{"1"}
	if err := trivial.Exec(ctx, rc, keys, args).Error(); err != nil { // load the script
		b.Fatal(err)
	}
	for b.Loop() {
		for range 2 {
			if err := trivial.Exec(ctx, rc, keys, args).Error(); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// BenchmarkPing is one PING round trip, for scale.
func BenchmarkPing(b *testing.B) {
	rc := redistest.Shared(b).Client(b)
	ctx := context.Background()
	for b.Loop() {
		if err := rc.Do(ctx, rc.B().Ping().Build()).Error(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRawLockScripts runs rlock's own acquire and release scripts (lua.Acquire,
// lua.Release) back to back through rueidis, without the library around them: the
// difference to BenchmarkUncontendedLockUnlock is the library's own cost (renewal wheel,
// unlock-latch deletion, owner bookkeeping).
func BenchmarkRawLockScripts(b *testing.B) {
	rc := redistest.Shared(b).Client(b)
	ctx := context.Background()
	name := benchName(b)
	channel := keys.LockChannel(name)
	field := "00000000-0000-0000-0000-000000000000:1"
	for i := 0; b.Loop(); i++ {
		if err := lua.Acquire.Exec(ctx, rc, []string{name}, []string{"30000", field}).Error(); !rueidis.IsRedisNil(err) {
			b.Fatalf("acquire: %v", err)
		}
		latch := keys.UnlockLatch(name, strconv.Itoa(i))
		n, err := lua.Release.Exec(ctx, rc, []string{name, channel, latch},
			[]string{"0", "30000", field, "PUBLISH", "1000"}).AsInt64()
		if err != nil || n != 1 {
			b.Fatalf("release: %d, %v", n, err)
		}
	}
}
