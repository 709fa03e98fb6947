package lua

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestExpirableSemaphoreScripts runs the permit-expirable semaphore's scripts directly on
// key "k", its timeouts "{k}:timeout" and channel "redisson_sc:{k}", with a "now" chosen by
// the test, so expiry is exact.
func TestExpirableSemaphoreScripts(t *testing.T) {
	const ch, timeouts = "redisson_sc:{k}", "{k}:timeout"
	f := newSyncFixture(t, ch)
	ctx := context.Background()
	ks := []string{"k", timeouts, ch}
	const now = int64(1_000_000)
	at := func(ms int64) string { return strconv.FormatInt(ms, 10) }
	run := func(s Script, when int64, args ...string) rueidis.RedisResult {
		return s.Exec(ctx, f.rc, ks, append([]string{at(when), "PUBLISH"}, args...))
	}
	acquire := func(when int64, score string, ids ...string) (string, bool) {
		t.Helper()
		v, err := run(PermitsAcquire, when, append([]string{strconv.Itoa(len(ids)), score}, ids...)...).ToString()
		if rueidis.IsRedisNil(err) {
			return "", false
		}
		require.NoError(t, err)
		return v, true
	}
	count := func(when int64, which string) int64 {
		t.Helper()
		return must(run(PermitsCount, when, which).AsInt64())
	}
	score := func(id string) string {
		v, err := f.rc.Do(ctx, f.rc.B().Zscore().Key(timeouts).Member(id).Build()).ToString()
		if rueidis.IsRedisNil(err) {
			return "<nil>"
		}
		return must(v, err)
	}

	_, ok := acquire(now, NeverExpires, "a")
	assert.False(t, ok, "no key, no permits, nothing held: nil")
	assert.Equal(t, int64(1), f.int(TrySet, []string{"k", ch}, "3", "3", "PUBLISH"))
	assert.Equal(t, []string{"3"}, f.published())

	// Two permits with a lease, one without.
	v, _ := acquire(now, at(now+100), "a", "b")
	assert.Equal(t, "OK", v)
	v, _ = acquire(now, NeverExpires, "c")
	assert.Equal(t, "OK", v)
	assert.Equal(t, "0", f.get())
	assert.Equal(t, at(now+100), score("a"))
	assert.Equal(t, NeverExpires, score("c"))
	v, _ = acquire(now+50, at(now+150), "d")
	assert.Equal(t, ":"+at(now+100), v, "too few: the earliest expiry")
	assert.Equal(t, int64(3), count(now+50, "acquired"))
	assert.Equal(t, int64(3), count(now+50, "permits"))
	assert.Empty(t, f.published(), "nothing expired, nothing published")

	// At their expiry, an acquire of one reclaims at most one expired permit.
	v, _ = acquire(now+100, at(now+200), "d")
	assert.Equal(t, "OK", v)
	assert.Equal(t, []string{"1"}, f.published(), "the reclaimed count")
	assert.Equal(t, "<nil>", score("a"))
	assert.Equal(t, at(now+100), score("b"), "reclaimed later")
	assert.Equal(t, int64(1), count(now+100, "available"), "b reclaimed")
	assert.Equal(t, []string{"1"}, f.published())
	assert.Equal(t, int64(3), count(now+100, "permits"))
	assert.Equal(t, int64(2), count(now+100, "acquired"))

	// Release by id: 1 while held, 0 when expired (given back all the same) or not held.
	assert.Equal(t, int64(1), must(run(PermitRelease, now+100, "c").AsInt64()))
	assert.Equal(t, []string{"2"}, f.published(), "the new count")
	assert.Equal(t, int64(0), must(run(PermitRelease, now+100, "c").AsInt64()), "not held")
	assert.Empty(t, f.published())
	assert.Equal(t, int64(0), must(run(PermitRelease, now+300, "d").AsInt64()), "expired")
	assert.Equal(t, []string{"3"}, f.published())
	assert.Equal(t, "3", f.get())
	_, ok = acquire(now+300, NeverExpires, "x", "y", "z", "w")
	assert.False(t, ok, "too few, nothing held: nil")

	// Release of several ids: all or none; publishes the number released.
	v, _ = acquire(now+300, at(now+400), "e", "f")
	assert.Equal(t, "OK", v)
	assert.Equal(t, int64(0), must(run(PermitsRelease, now+300, "e", "nope").AsInt64()))
	assert.Equal(t, at(now+400), score("e"), "none released")
	assert.Equal(t, int64(2), must(run(PermitsRelease, now+300, "e", "f").AsInt64()))
	assert.Equal(t, []string{"2"}, f.published())
	assert.Equal(t, "3", f.get())

	// Leases: read, update, never expiring.
	v, _ = acquire(now, at(now+100), "g")
	assert.Equal(t, "OK", v)
	assert.Equal(t, int64(60), must(run(PermitLease, now+40, "g", "").AsInt64()))
	assert.Equal(t, int64(1), must(run(PermitLease, now+40, "g", at(now+1000)).AsInt64()))
	assert.Equal(t, int64(800), must(run(PermitLease, now+200, "g", "").AsInt64()))
	assert.Equal(t, int64(1), must(run(PermitLease, now+200, "g", NeverExpires).AsInt64()))
	assert.Equal(t, int64(-1), must(run(PermitLease, now+5000, "g", "").AsInt64()))
	assert.True(t, rueidis.IsRedisNil(run(PermitLease, now, "nope", "").Error()), "not held: nil")
	assert.Empty(t, f.published())

	// Add permits: publishes a positive delta, not the count; the count may go below zero.
	assert.Equal(t, int64(4), must(run(PermitsAdd, now, "2").AsInt64()))
	assert.Equal(t, int64(-1), must(run(PermitsAdd, now, "-5").AsInt64()))
	assert.Equal(t, []string{"2"}, f.published())

	// The timeouts get the key's TTL.
	require.NoError(t, f.rc.Do(ctx, f.rc.B().Set().Key("k").Value("5").Px(time.Minute).Build()).Error())
	v, _ = acquire(now, NeverExpires, "h")
	assert.Equal(t, "OK", v)
	ttl := must(f.rc.Do(ctx, f.rc.B().Pttl().Key(timeouts).Build()).AsInt64())
	assert.Greater(t, ttl, int64(0))
}
