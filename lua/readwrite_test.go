package lua

import (
	"context"
	"strconv"
	"testing"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/goredisson/goredisson/internal/redistest"
)

// The read-write lock "rw" and the keys Redisson derives from it for field and other.
const (
	rwChannel  = "redisson_rwlock:{rw}"
	rwPrefix   = "{rw}"
	writer     = field + ":write"
	fieldTO    = rwPrefix + ":" + field + ":rwlock_timeout"
	otherTO    = rwPrefix + ":" + other + ":rwlock_timeout"
	rwLatchPfx = "redisson_unlock_latch:{rw}:"
)

// rwFixture is a fresh server with a listener on the read-write lock's channel.
type rwFixture struct {
	t    *testing.T
	rc   rueidis.Client
	msgs <-chan string
	sent map[string]bool // release request ids sent: a second send is a retry
}

func newRWFixture(t *testing.T) *rwFixture {
	srv := redistest.Start(t)
	return &rwFixture{t: t, rc: srv.Client(t), msgs: srv.Listen(t, rwChannel), sent: map[string]bool{}}
}

func (f *rwFixture) do(args ...string) rueidis.RedisResult {
	return f.rc.Do(context.Background(), f.rc.B().Arbitrary(args...).Build())
}

func (f *rwFixture) exec(s Script, keys []string, args ...string) rueidis.RedisResult {
	return s.Exec(context.Background(), f.rc, keys, args)
}

func (f *rwFixture) hash() map[string]string      { return redistest.HGetAll(f.t, f.rc, "rw") }
func (f *rwFixture) pttl(key string) int64        { return redistest.PTTL(f.t, f.rc, key) }
func (f *rwFixture) published() []string          { return redistest.Published(f.t, f.rc, rwChannel, f.msgs) }
func (f *rwFixture) reset()                       { require.NoError(f.t, f.do("FLUSHALL").Error()) }
func (f *rwFixture) keys(pattern string) []string { return must(f.do("KEYS", pattern).AsStrSlice()) }

func (f *rwFixture) readAcquire(lease, holder string) rueidis.RedisResult {
	return f.exec(ReadAcquire, []string{"rw", rwPrefix + ":" + holder + ":rwlock_timeout"}, lease, holder, holder+":write")
}

func (f *rwFixture) writeAcquire(lease, holder string) rueidis.RedisResult {
	return f.exec(WriteAcquire, []string{"rw"}, lease, holder+":write")
}

// attempt returns the retry argument of a release with request id: "0" the first time, "1"
// when the same id is sent again.
func (f *rwFixture) attempt(id string) string {
	if f.sent[id] {
		return "1"
	}
	f.sent[id] = true
	return "0"
}

func (f *rwFixture) readRelease(id, holder string) rueidis.RedisResult {
	return f.exec(ReadRelease, []string{"rw", rwChannel, rwPrefix + ":" + holder + ":rwlock_timeout", rwPrefix, rwLatchPfx + id},
		"0", holder, "20000", f.attempt(id), "PUBLISH")
}

func (f *rwFixture) writeRelease(id, lease, holder string) rueidis.RedisResult {
	return f.exec(WriteRelease, []string{"rw", rwChannel, rwLatchPfx + id}, "1", lease, holder+":write", "20000", f.attempt(id), "PUBLISH")
}

func acquired(t *testing.T, r rueidis.RedisResult, msg string) {
	t.Helper()
	assert.True(t, rueidis.IsRedisNil(r.Error()), "%s: nil reply = acquired, got %v", msg, r)
}

func TestReadAcquireScript(t *testing.T) {
	f := newRWFixture(t)
	acquired(t, f.readAcquire("30000", field), "first reader")
	assert.Equal(t, map[string]string{"mode": "read", field: "1"}, f.hash())
	assert.InDelta(t, 30000, f.pttl("rw"), 1000)
	assert.Equal(t, "1", must(f.do("GET", fieldTO+":1").ToString()), "timeout key 1")
	assert.InDelta(t, 30000, f.pttl(fieldTO+":1"), 1000)

	acquired(t, f.readAcquire("10000", field), "re-entry")
	assert.Equal(t, map[string]string{"mode": "read", field: "2"}, f.hash())
	assert.InDelta(t, 10000, f.pttl(fieldTO+":2"), 1000, "timeout key 2 has the re-entry's lease")
	assert.InDelta(t, 30000, f.pttl("rw"), 1000, "the lock keeps the longer TTL")

	acquired(t, f.readAcquire("60000", other), "a second reader shares the lock")
	assert.Equal(t, map[string]string{"mode": "read", field: "2", other: "1"}, f.hash())
	assert.InDelta(t, 60000, f.pttl("rw"), 1000, "a longer lease lengthens the lock")
	assert.InDelta(t, 60000, f.pttl(otherTO+":1"), 1000)

	ttl, err := f.writeAcquire("30000", field).AsInt64()
	require.NoError(t, err)
	assert.InDelta(t, 60000, ttl, 1000, "a reader cannot take the write lock (no upgrade): the PTTL")
	assert.Empty(t, f.published(), "acquiring publishes nothing")

	t.Run("the writer may also read", func(t *testing.T) {
		f.reset()
		acquired(t, f.writeAcquire("30000", field), "writer")
		acquired(t, f.readAcquire("5000", field), "the same owner reads")
		assert.Equal(t, map[string]string{"mode": "write", writer: "1", field: "1"}, f.hash())
		assert.InDelta(t, 30000, f.pttl("rw"), 1000, "max(PTTL, lease)")
		assert.InDelta(t, 5000, f.pttl(fieldTO+":1"), 1000)
		ttl, err := f.readAcquire("30000", other).AsInt64()
		require.NoError(t, err)
		assert.InDelta(t, 30000, ttl, 1000, "another reader waits for the writer")
		assert.False(t, redistest.Exists(t, f.rc, otherTO+":1"))
	})
	t.Run("no TTL", func(t *testing.T) {
		f.reset()
		require.NoError(t, f.do("HSET", "rw", "mode", "write", other+":write", "1").Error())
		ttl, err := f.readAcquire("30000", field).AsInt64()
		require.NoError(t, err)
		assert.Equal(t, int64(-1), ttl)
	})
}

func TestWriteAcquireScript(t *testing.T) {
	f := newRWFixture(t)
	acquired(t, f.writeAcquire("30000", field), "writer")
	assert.Equal(t, map[string]string{"mode": "write", writer: "1"}, f.hash())
	assert.InDelta(t, 30000, f.pttl("rw"), 1000)

	acquired(t, f.writeAcquire("10000", field), "re-entry")
	assert.Equal(t, map[string]string{"mode": "write", writer: "2"}, f.hash())
	assert.InDelta(t, 40000, f.pttl("rw"), 1000, "a re-entry adds its lease to the TTL")

	ttl, err := f.writeAcquire("30000", other).AsInt64()
	require.NoError(t, err)
	assert.InDelta(t, 40000, ttl, 1000, "another writer gets the PTTL")
	ttl, err = f.readAcquire("30000", other).AsInt64()
	require.NoError(t, err)
	assert.InDelta(t, 40000, ttl, 1000, "and so does another reader")
	assert.Equal(t, map[string]string{"mode": "write", writer: "2"}, f.hash())
	assert.Empty(t, f.published())

	f.reset()
	acquired(t, f.readAcquire("30000", other), "reader")
	ttl, err = f.writeAcquire("30000", other).AsInt64()
	require.NoError(t, err)
	assert.InDelta(t, 30000, ttl, 1000, "the reader itself cannot write")
}

func TestReadReleaseScript(t *testing.T) {
	f := newRWFixture(t)
	t.Run("not locked: publishes, nil", func(t *testing.T) {
		assert.True(t, rueidis.IsRedisNil(f.readRelease("a1", field).Error()))
		assert.Equal(t, []string{"0"}, f.published(), "waiters of an expired lock wake")
		assert.False(t, redistest.Exists(t, f.rc, rwLatchPfx+"a1"), "no latch for nil")
	})
	t.Run("not a reader: nil", func(t *testing.T) {
		f.reset()
		acquired(t, f.readAcquire("30000", other), "other reads")
		assert.True(t, rueidis.IsRedisNil(f.readRelease("a2", field).Error()))
		assert.Equal(t, map[string]string{"mode": "read", other: "1"}, f.hash())
		assert.Empty(t, f.published())
	})
	t.Run("partial: the TTL follows the longest timeout key", func(t *testing.T) {
		f.reset()
		acquired(t, f.readAcquire("20000", field), "1")
		acquired(t, f.readAcquire("50000", field), "2")
		assert.InDelta(t, 50000, f.pttl("rw"), 1000)
		assert.Equal(t, int64(0), must(f.readRelease("b1", field).AsInt64()), "still held")
		assert.Equal(t, map[string]string{"mode": "read", field: "1"}, f.hash())
		assert.False(t, redistest.Exists(t, f.rc, fieldTO+":2"), "the top timeout key is deleted")
		assert.True(t, redistest.Exists(t, f.rc, fieldTO+":1"))
		assert.InDelta(t, 20000, f.pttl("rw"), 1000, "the lock lives as long as the longest remaining timeout key")
		assert.Equal(t, "0", must(f.do("GET", rwLatchPfx+"b1").ToString()))
		assert.Empty(t, f.published())
	})
	t.Run("another reader remains", func(t *testing.T) {
		f.reset()
		acquired(t, f.readAcquire("20000", field), "field")
		acquired(t, f.readAcquire("40000", other), "other")
		assert.Equal(t, int64(0), must(f.readRelease("c1", field).AsInt64()))
		assert.Equal(t, map[string]string{"mode": "read", other: "1"}, f.hash())
		assert.InDelta(t, 40000, f.pttl("rw"), 1000)
		assert.Empty(t, f.published())
	})
	t.Run("another reader whose timeout keys expired: the lock is freed", func(t *testing.T) {
		f.reset()
		acquired(t, f.readAcquire("30000", field), "field")
		require.NoError(t, f.do("HSET", "rw", other, "1").Error()) // a reader without timeout keys
		assert.Equal(t, int64(1), must(f.readRelease("c2", field).AsInt64()))
		assert.Empty(t, f.hash(), "a reader that keeps no timeout keys is not seen")
		assert.Equal(t, []string{"0"}, f.published())
	})
	t.Run("the writer's own read: write mode stays", func(t *testing.T) {
		f.reset()
		acquired(t, f.writeAcquire("30000", field), "writer")
		acquired(t, f.readAcquire("30000", field), "its read")
		require.NoError(t, f.do("PEXPIRE", "rw", "45000").Error())
		assert.Equal(t, int64(0), must(f.readRelease("d1", field).AsInt64()))
		assert.Equal(t, map[string]string{"mode": "write", writer: "1"}, f.hash())
		assert.InDelta(t, 45000, f.pttl("rw"), 1000, "the writer keeps its TTL")
		assert.Empty(t, f.published())
	})
	t.Run("last reader, and the retry", func(t *testing.T) {
		f.reset()
		acquired(t, f.readAcquire("30000", field), "reader")
		assert.Equal(t, int64(1), must(f.readRelease("e1", field).AsInt64()), "freed")
		assert.Empty(t, f.hash())
		assert.Empty(t, f.keys(rwPrefix+":*"), "no timeout key left")
		assert.Equal(t, []string{"0"}, f.published(), "a read release publishes 0")
		assert.Equal(t, int64(1), must(f.readRelease("e1", field).AsInt64()), "a retry replays the first result")
		assert.Empty(t, f.published(), "without publishing again")
	})
	t.Run("two publish commands", func(t *testing.T) {
		f.reset()
		acquired(t, f.readAcquire("30000", field), "reader")
		r := f.exec(ReadRelease, []string{"rw", rwChannel, fieldTO, rwPrefix, rwLatchPfx + "f1"}, "0", field, "20000", "0", "PUBLISH", "PUBLISH")
		assert.Equal(t, int64(1), must(r.AsInt64()))
		assert.Equal(t, []string{"0", "0"}, f.published(), "once per publish command")
	})
}

func TestWriteReleaseScript(t *testing.T) {
	f := newRWFixture(t)
	t.Run("not locked: publishes, nil", func(t *testing.T) {
		assert.True(t, rueidis.IsRedisNil(f.writeRelease("a1", "30000", field).Error()))
		assert.Equal(t, []string{"1"}, f.published())
	})
	t.Run("read mode or another writer: nil", func(t *testing.T) {
		f.reset()
		acquired(t, f.readAcquire("30000", field), "reader")
		assert.True(t, rueidis.IsRedisNil(f.writeRelease("a2", "30000", field).Error()), "read mode")
		f.reset()
		acquired(t, f.writeAcquire("30000", other), "other writes")
		assert.True(t, rueidis.IsRedisNil(f.writeRelease("a3", "30000", field).Error()), "not the writer")
		assert.Equal(t, map[string]string{"mode": "write", other + ":write": "1"}, f.hash())
		assert.Empty(t, f.published())
	})
	t.Run("partial", func(t *testing.T) {
		f.reset()
		acquired(t, f.writeAcquire("5000", field), "1")
		acquired(t, f.writeAcquire("5000", field), "2")
		assert.Equal(t, int64(0), must(f.writeRelease("b1", "30000", field).AsInt64()))
		assert.Equal(t, map[string]string{"mode": "write", writer: "1"}, f.hash())
		assert.InDelta(t, 30000, f.pttl("rw"), 1000, "TTL reset to the lease")
		acquired(t, f.writeAcquire("5000", field), "2 again")
		ttl := f.pttl("rw")
		assert.Equal(t, int64(0), must(f.writeRelease("b2", "0", field).AsInt64()))
		assert.InDelta(t, ttl, f.pttl("rw"), 1000, `lease "0" keeps the TTL`)
		assert.Empty(t, f.published())
	})
	t.Run("final: deleted, publishes 1, and the retry", func(t *testing.T) {
		f.reset()
		acquired(t, f.writeAcquire("30000", field), "writer")
		assert.Equal(t, int64(1), must(f.writeRelease("c1", "30000", field).AsInt64()))
		assert.Empty(t, f.hash())
		assert.Equal(t, []string{"1"}, f.published(), "a write release publishes 1")
		assert.False(t, redistest.Exists(t, f.rc, rwLatchPfx+"c1"), "a full release writes no latch")
		assert.True(t, rueidis.IsRedisNil(f.writeRelease("c1", "30000", field).Error()),
			"the retry finds the write hold gone: nil, which its caller (its last write hold) reads as released")
		assert.Equal(t, []string{"1"}, f.published(), "the lock is gone: published again, as for any release of a missing lock")
	})
	t.Run("partial keeps its latch, a first attempt does not look", func(t *testing.T) {
		f.reset()
		acquired(t, f.writeAcquire("30000", field), "1")
		acquired(t, f.writeAcquire("30000", field), "2")
		assert.Equal(t, int64(0), must(f.writeRelease("g1", "30000", field).AsInt64()))
		assert.Equal(t, "0", must(f.do("GET", rwLatchPfx+"g1").ToString()))
		assert.Equal(t, int64(0), must(f.writeRelease("g1", "30000", field).AsInt64()), "the retry replays")
		assert.Equal(t, map[string]string{"mode": "write", writer: "1"}, f.hash(), "counted once")
		f.do("SET", rwLatchPfx+"g2", "0")
		assert.Equal(t, int64(1), must(f.writeRelease("g2", "30000", field).AsInt64()), "a first attempt does not read the latch")
		assert.Equal(t, []string{"1"}, f.published())
	})
	t.Run("final with the owner's reads: read mode", func(t *testing.T) {
		f.reset()
		acquired(t, f.writeAcquire("30000", field), "writer")
		acquired(t, f.readAcquire("30000", field), "its read")
		assert.Equal(t, int64(1), must(f.writeRelease("d1", "30000", field).AsInt64()))
		assert.Equal(t, map[string]string{"mode": "read", field: "1"}, f.hash(), "downgraded to a read")
		assert.InDelta(t, 30000, f.pttl("rw"), 1000)
		assert.Equal(t, []string{"1"}, f.published(), "readers waiting for the writer wake (Redisson publishes nothing here)")
		acquired(t, f.readAcquire("30000", other), "another reader now shares it")
	})
}

func TestReadWriteForceReleaseScript(t *testing.T) {
	f := newRWFixture(t)
	force := func(mode, msg string) int64 {
		return must(f.exec(ReadWriteForceRelease, []string{"rw", rwChannel}, mode, msg, "PUBLISH").AsInt64())
	}
	assert.Equal(t, int64(0), force("read", "0"), "not locked")
	acquired(t, f.readAcquire("30000", field), "reader")
	assert.Equal(t, int64(0), force("write", "1"), "read mode is not ended by the write lock")
	assert.Equal(t, map[string]string{"mode": "read", field: "1"}, f.hash())
	assert.Empty(t, f.published())
	assert.Equal(t, int64(1), force("read", "0"))
	assert.Empty(t, f.hash())
	assert.Equal(t, []string{"0"}, f.published())
	assert.True(t, redistest.Exists(t, f.rc, fieldTO+":1"), "timeout keys are left to expire")

	acquired(t, f.writeAcquire("30000", field), "writer")
	assert.Equal(t, int64(0), force("read", "0"))
	assert.Equal(t, int64(1), force("write", "1"))
	assert.Empty(t, f.hash())
	assert.Equal(t, []string{"1"}, f.published())
}

func TestReadLockedScript(t *testing.T) {
	f := newRWFixture(t)
	locked := func() int64 { return must(f.exec(ReadLocked, []string{"rw"}).AsInt64()) }
	assert.Equal(t, int64(0), locked(), "not locked")
	acquired(t, f.writeAcquire("30000", field), "writer")
	assert.Equal(t, int64(0), locked(), "write mode, no reader")
	acquired(t, f.readAcquire("30000", field), "the writer's read")
	assert.Equal(t, int64(1), locked(), "the writer also reads")
	f.reset()
	acquired(t, f.readAcquire("30000", other), "reader")
	assert.Equal(t, int64(1), locked())
}

func TestRenewReadScript(t *testing.T) {
	f := newRWFixture(t)
	acquired(t, f.readAcquire("1000", field), "1")
	acquired(t, f.readAcquire("1000", field), "2")
	acquired(t, f.readAcquire("1000", other), "other")
	require.NoError(t, f.do("HSET", "rw2", "mode", "read").Error())
	got, err := f.exec(RenewRead, []string{"rw", rwPrefix, "rw2", "{rw2}"}, "30000", field, field).AsIntSlice()
	require.NoError(t, err)
	assert.Equal(t, []int64{1, 0}, got)
	assert.InDelta(t, 30000, f.pttl("rw"), 1000)
	for k := 1; k <= 2; k++ {
		assert.InDelta(t, 30000, f.pttl(fieldTO+":"+strconv.Itoa(k)), 1000, "timeout key %d renewed", k)
	}
	assert.LessOrEqual(t, f.pttl(otherTO+":1"), int64(1000), "another reader's timeout key is not renewed")
	assert.Equal(t, map[string]string{"mode": "read"}, redistest.HGetAll(t, f.rc, "rw2"), "no field created")
	assert.Empty(t, f.keys("{rw2}*"), "no timeout key created")
}
