package lua

import (
	"context"
	"testing"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/goredisson/goredisson/internal/redistest"
)

func TestMain(m *testing.M) { redistest.Main(m) }

const (
	field   = "0b9a4d3e-9a7c-4d0e-8f3e-2b1a5c6d7e8f:1"
	other   = "6f1c2a9e-3b7d-4c1e-9a55-0d2f8e4b7c11:57"
	channel = "redisson_lock__channel:{lk}"
)

// fixture is a test's fresh server, with a listener on the lock's channel.
type fixture struct {
	t    testing.TB
	rc   rueidis.Client
	msgs <-chan string
}

// setup gives each test a fresh server and a listener on the lock's channel.
func setup(t *testing.T) *fixture {
	srv := redistest.Start(t)
	return &fixture{t: t, rc: srv.Client(t), msgs: srv.Listen(t, channel)}
}

// in returns the fixture for subtest t.
func (f *fixture) in(t *testing.T) *fixture { return &fixture{t: t, rc: f.rc, msgs: f.msgs} }

func (f *fixture) do(args ...string) rueidis.RedisResult {
	return f.rc.Do(context.Background(), f.rc.B().Arbitrary(args...).Build())
}

func (f *fixture) hash() map[string]string { return redistest.HGetAll(f.t, f.rc, "lk") }

func (f *fixture) pttl() int64 { return redistest.PTTL(f.t, f.rc, "lk") }

// published returns the messages published on the channel since the last call.
func (f *fixture) published() []string { return redistest.Published(f.t, f.rc, channel, f.msgs) }

func (f *fixture) exec(s Script, keys []string, args ...string) rueidis.RedisResult {
	return s.Exec(context.Background(), f.rc, keys, args)
}

func TestAcquireScript(t *testing.T) {
	f := setup(t)
	r := f.exec(Acquire, []string{"lk"}, "30000", field)
	assert.True(t, rueidis.IsRedisNil(r.Error()), "nil reply = acquired")
	assert.Equal(t, map[string]string{field: "1"}, f.hash())
	assert.InDelta(t, 30000, f.pttl(), 1000)

	r = f.exec(Acquire, []string{"lk"}, "10000", field)
	assert.True(t, rueidis.IsRedisNil(r.Error()), "re-entry")
	assert.Equal(t, map[string]string{field: "2"}, f.hash())
	assert.InDelta(t, 10000, f.pttl(), 1000, "the lease of the latest acquisition")

	ttl, err := f.exec(Acquire, []string{"lk"}, "30000", other).AsInt64()
	require.NoError(t, err)
	assert.InDelta(t, 10000, ttl, 1000, "another holder gets the PTTL")
	assert.Equal(t, map[string]string{field: "2"}, f.hash())

	require.NoError(t, f.do("PERSIST", "lk").Error())
	ttl, err = f.exec(Acquire, []string{"lk"}, "30000", other).AsInt64()
	require.NoError(t, err)
	assert.Equal(t, int64(-1), ttl, "no TTL")
}

func TestReleaseScript(t *testing.T) {
	f := setup(t)
	latch := func(id string) string { return "redisson_unlock_latch:{lk}:" + id }
	release := func(id, lease string) rueidis.RedisResult {
		return f.exec(Release, []string{"lk", channel, latch(id)}, "0", lease, field, "PUBLISH", "20000")
	}
	retry := func(id, lease string) rueidis.RedisResult {
		return f.exec(Release, []string{"lk", channel, latch(id)}, "0", lease, field, "PUBLISH", "20000", "1")
	}
	// hold sets the lock to field's hold, count times, with a TTL of ttl ms.
	hold := func(t *testing.T, count, ttl string) {
		require.NoError(t, f.do("HSET", "lk", field, count).Error())
		require.NoError(t, f.do("PEXPIRE", "lk", ttl).Error())
	}

	t.Run("not held", func(t *testing.T) {
		r := release("a1", "30000")
		assert.True(t, rueidis.IsRedisNil(r.Error()), "not held: nil")
		assert.Equal(t, int64(0), must(f.do("EXISTS", latch("a1")).AsInt64()), "no latch for nil")
	})

	t.Run("partial release resets the TTL", func(t *testing.T) {
		f := f.in(t)
		hold(t, "2", "5000")
		assert.Equal(t, int64(0), must(release("b1", "30000").AsInt64()), "still held")
		assert.Equal(t, map[string]string{field: "1"}, f.hash())
		assert.InDelta(t, 30000, f.pttl(), 1000, "TTL reset to the lease")
		assert.Empty(t, f.published())
		assert.InDelta(t, 20000, must(f.do("PTTL", latch("b1")).AsInt64()), 1000)
	})

	t.Run(`lease "0" keeps the TTL`, func(t *testing.T) {
		f := f.in(t)
		hold(t, "2", "5000")
		assert.Equal(t, int64(0), must(release("b2", "0").AsInt64()))
		assert.InDelta(t, 5000, f.pttl(), 1000, `lease "0" keeps the TTL`)
	})

	t.Run("final release, and its retry", func(t *testing.T) {
		f := f.in(t)
		hold(t, "1", "5000")
		assert.Equal(t, int64(1), must(release("c1", "30000").AsInt64()), "fully released")
		assert.Empty(t, f.hash())
		assert.Equal(t, []string{"0"}, f.published())
		assert.Equal(t, int64(0), must(f.do("EXISTS", latch("c1")).AsInt64()), "a full release writes no latch")

		r := retry("c1", "30000")
		assert.True(t, rueidis.IsRedisNil(r.Error()), "a retry finds the field gone: nil, which the caller reads as released")
		assert.Empty(t, f.published(), "without publishing again")
	})

	t.Run("partial release, and its retry", func(t *testing.T) {
		f := f.in(t)
		hold(t, "3", "5000")
		assert.Equal(t, int64(0), must(release("p1", "30000").AsInt64()))
		assert.Equal(t, "0", must(f.do("GET", latch("p1")).ToString()), "a partial release stores its reply")
		assert.Equal(t, int64(0), must(retry("p1", "30000").AsInt64()), "a retry replays it")
		assert.Equal(t, map[string]string{field: "2"}, f.hash(), "and does not count twice")
	})

	t.Run("a first attempt does not read the latch", func(t *testing.T) {
		f := f.in(t)
		hold(t, "2", "5000")
		require.NoError(t, f.do("SET", latch("q1"), "1").Error())
		assert.Equal(t, int64(0), must(release("q1", "30000").AsInt64()), "request ids are new: nothing to replay")
		assert.Equal(t, map[string]string{field: "1"}, f.hash())
	})

	t.Run("retry of a request that never ran", func(t *testing.T) {
		f := f.in(t)
		hold(t, "1", "5000")
		assert.Equal(t, int64(1), must(retry("r1", "30000").AsInt64()), "no latch, field held: released now")
		assert.Equal(t, []string{"0"}, f.published())
	})

	t.Run("second publish command", func(t *testing.T) {
		f := f.in(t)
		redistest.Require(t, f.rc, redistest.ShardedPubSub)
		hold(t, "1", "5000")
		r := f.exec(Release, []string{"lk", channel, latch("d1")}, "0", "30000", field, "SPUBLISH", "20000", "0", "PUBLISH")
		assert.Equal(t, int64(1), must(r.AsInt64()))
		assert.Equal(t, []string{"0"}, f.published(), "the second publish command reaches classic subscribers")
	})

	t.Run("empty publish command (spin lock)", func(t *testing.T) {
		f := f.in(t)
		hold(t, "1", "5000")
		r := f.exec(Release, []string{"lk", channel, latch("e1")}, "0", "30000", field, "", "20000")
		assert.Equal(t, int64(1), must(r.AsInt64()), "a spin lock's release")
		assert.Empty(t, f.hash())
		assert.Empty(t, f.published(), "an empty publish command publishes nothing")
	})
}

func TestForceReleaseScript(t *testing.T) {
	f := setup(t)
	assert.Equal(t, int64(0), must(f.exec(ForceRelease, []string{"lk", channel}, "0", "PUBLISH").AsInt64()))
	assert.Empty(t, f.published())
	require.NoError(t, f.do("HSET", "lk", other, "3").Error())
	assert.Equal(t, int64(1), must(f.exec(ForceRelease, []string{"lk", channel}, "0", "PUBLISH").AsInt64()))
	assert.Empty(t, f.hash())
	assert.Equal(t, []string{"0"}, f.published())

	require.NoError(t, f.do("HSET", "lk", other, "1").Error())
	assert.Equal(t, int64(1), must(f.exec(ForceRelease, []string{"lk", channel}, "0", "").AsInt64()), "a spin lock's force release")
	assert.Empty(t, f.hash())
	assert.Empty(t, f.published(), "an empty publish command publishes nothing")
}

func TestRenewScript(t *testing.T) {
	f := setup(t)
	require.NoError(t, f.do("HSET", "lk", field, "1").Error())
	require.NoError(t, f.do("PEXPIRE", "lk", "1000").Error())
	require.NoError(t, f.do("HSET", "lk2", other, "1").Error())
	require.NoError(t, f.do("PEXPIRE", "lk2", "1000").Error())
	got, err := f.exec(Renew, []string{"lk", "lk2", "missing"}, "30000", field, field, field).AsIntSlice()
	require.NoError(t, err)
	assert.Equal(t, []int64{1, 0, 0}, got)
	assert.InDelta(t, 30000, f.pttl(), 1000)
	assert.LessOrEqual(t, must(f.do("PTTL", "lk2").AsInt64()), int64(1000), "another holder's lock is not renewed")
	assert.Equal(t, int64(0), must(f.do("EXISTS", "missing").AsInt64()), "renewal never creates a key")
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

func TestFencedAcquireScript(t *testing.T) {
	f := setup(t)
	const token = "redisson_lock_token:{lk}"
	acquire := func(lease, holder string) []int64 {
		v, err := f.exec(FencedAcquire, []string{"lk", token}, lease, holder).AsIntSlice()
		require.NoError(t, err)
		return v
	}
	assert.Equal(t, []int64{-1, 1}, acquire("30000", field), "acquired: {-1, token}")
	assert.Equal(t, map[string]string{field: "1"}, f.hash())
	assert.InDelta(t, 30000, f.pttl(), 1000)
	assert.Equal(t, int64(-1), must(f.do("PTTL", token).AsInt64()), "the counter has no TTL")

	assert.Equal(t, []int64{-1, 2}, acquire("10000", field), "a re-entry is issued a new token")
	assert.Equal(t, map[string]string{field: "2"}, f.hash())
	assert.InDelta(t, 10000, f.pttl(), 1000)

	got := acquire("30000", other)
	assert.InDelta(t, 10000, got[0], 1000, "another holder gets {PTTL, -1}")
	assert.Equal(t, int64(-1), got[1])
	assert.Equal(t, "2", must(f.do("GET", token).ToString()), "no token for a failed attempt")

	require.NoError(t, f.do("PERSIST", "lk").Error())
	assert.Equal(t, []int64{-1, -1}, acquire("30000", other), "no TTL: PTTL -1, still no token")

	require.NoError(t, f.do("DEL", "lk").Error())
	assert.Equal(t, []int64{-1, 3}, acquire("30000", other), "the counter outlives the lock")
	assert.Empty(t, f.published(), "acquiring publishes nothing")
}

func TestNonReentrantAcquireScript(t *testing.T) {
	f := setup(t)
	acquire := func(lease, holder string) rueidis.RedisResult {
		return f.exec(NonReentrantAcquire, []string{"lk"}, lease, holder, "NON_REENTRANT_REACQUIRE")
	}
	assert.True(t, rueidis.IsRedisNil(acquire("30000", field).Error()), "nil reply = acquired")
	assert.Equal(t, map[string]string{field: "1"}, f.hash())
	assert.InDelta(t, 30000, f.pttl(), 1000)

	err := acquire("10000", field).Error()
	require.Error(t, err)
	assert.Equal(t, "NON_REENTRANT_REACQUIRE", err.Error(), "the same holder again: the error reply")
	assert.Equal(t, map[string]string{field: "1"}, f.hash(), "the hold is unchanged")
	assert.InDelta(t, 30000, f.pttl(), 1000, "and so is its TTL")

	ttl, err := acquire("30000", other).AsInt64()
	require.NoError(t, err)
	assert.InDelta(t, 30000, ttl, 1000, "another holder gets the PTTL")
	assert.Equal(t, map[string]string{field: "1"}, f.hash())
	assert.Empty(t, f.published(), "acquiring publishes nothing")
}
