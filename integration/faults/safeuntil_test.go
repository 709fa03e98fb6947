package faults

import (
	"context"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/goredisson/goredisson/internal/redistest"
	"github.com/goredisson/goredisson/internal/redistest/rlocktest"
	"github.com/goredisson/goredisson/rlock"
)

// safeUntilRounds is how many partitions each lease kind goes through.
const safeUntilRounds = 20

// Safe-until: the connection of a holder is blackholed right after it acquires, 20 times per
// lease kind. Each time, Held must end (cause ErrLeaseExpired) before the server can expire
// the key, so before any other owner could take the lock. The server's expiry is bounded
// from below, on a separate connection, by the send time of the last PTTL read that still
// saw the key plus the TTL it reported.
func TestSafeUntilBeforeServerExpiry(t *testing.T) {
	const lease = time.Second
	for _, kind := range []struct {
		name    string
		acquire func(l *rlock.Lock, ctx context.Context) error
	}{
		{"watchdog", func(l *rlock.Lock, ctx context.Context) error { return l.Lock(ctx) }},
		{"explicit", func(l *rlock.Lock, ctx context.Context) error { return l.LockFor(ctx, lease) }},
	} {
		t.Run(kind.name, func(t *testing.T) {
			t.Parallel()
			srv := redistest.Shared(t)
			direct := srv.Client(t)
			var earliest time.Duration
			for i := range safeUntilRounds {
				p, rc := proxied(t, srv.Addr)
				c := rlocktest.NewClient(t, rc, rlock.Options{WatchdogTimeout: lease})
				l := c.NewLock(redistest.Name(t))
				ctx := ownerCtx(t, 30*time.Second)
				require.NoError(t, kind.acquire(l, ctx))
				work, stop, err := l.Held(ctx)
				require.NoError(t, err)
				ended := make(chan time.Time, 1)
				go func() { <-work.Done(); ended <- time.Now() }()

				p.Blackhole()
				expiry := serverExpiry(t, direct, l.Name())
				heldEnd := <-ended
				assert.ErrorIs(t, context.Cause(work), rlock.ErrLeaseExpired)
				margin := expiry.Sub(heldEnd)
				assert.Positive(t, margin, "round %d: Held ended %v after the server could expire the key", i, -margin)
				if i == 0 || margin < earliest {
					earliest = margin
				}
				stop()
				c.Close()
				p.Close()
			}
			t.Logf("%s lease %v, %d partitions: Held ended at least %v before the server's expiry",
				kind.name, lease, safeUntilRounds, earliest)
		})
	}
}

// serverExpiry watches name's PTTL from a connection of its own until the key is gone, and
// returns the earliest moment the server can have expired it: the send time of the last
// read that saw the key plus the TTL that read reported.
func serverExpiry(t *testing.T, rc rueidis.Client, name string) time.Time {
	t.Helper()
	var last time.Time
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		sent := time.Now()
		ms, err := rc.Do(context.Background(), rc.B().Pttl().Key(name).Build()).AsInt64()
		require.NoError(t, err)
		if ms < 0 {
			require.False(t, last.IsZero(), "the key was gone before the first read")
			return last
		}
		last = sent.Add(time.Duration(ms) * time.Millisecond)
		time.Sleep(2 * time.Millisecond) // polling interval of the observer, not a settling delay
	}
	t.Fatalf("%s did not expire within 30 s", name)
	return time.Time{}
}
