package lua

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/goredisson/goredisson/internal/redistest"
)

// The fair lock's keys for lock "lk", and three waiters.
const (
	fairQueue   = "redisson_lock_queue:{lk}"
	fairTimeout = "redisson_lock_timeout:{lk}"
	waiterB     = "6f1c2a9e-3b7d-4c1e-9a55-0d2f8e4b7c11:2"
	waiterC     = "6f1c2a9e-3b7d-4c1e-9a55-0d2f8e4b7c11:3"
	waiterD     = "0b9a4d3e-9a7c-4d0e-8f3e-2b1a5c6d7e8f:4"
	fairWait    = int64(300000) // Redisson's default thread-wait time
)

// fairFixture is a fresh server with listeners on the lock's own channel and on the
// channel of each waiter.
type fairFixture struct {
	*fixture
	now  int64 // the caller's clock passed to the scripts
	subs map[string]<-chan string
}

func newFairFixture(t *testing.T) *fairFixture {
	srv := redistest.Start(t)
	f := &fairFixture{fixture: &fixture{t: t, rc: srv.Client(t), msgs: srv.Listen(t, channel)},
		now: time.Now().UnixMilli(), subs: map[string]<-chan string{}}
	for _, w := range []string{field, waiterB, waiterC, waiterD} {
		f.subs[w] = srv.Listen(t, channel+":"+w)
	}
	return f
}

var fairKeys = []string{"lk", fairQueue, fairTimeout}

func ms(n int64) string { return strconv.FormatInt(n, 10) }

// acquire runs FairAcquire for w with a 30 s lease and the default wait.
func (f *fairFixture) acquire(w string) rueidis.RedisResult {
	return f.exec(FairAcquire, fairKeys, "30000", w, ms(fairWait), ms(f.now))
}

func (f *fairFixture) queue() []string {
	v, err := f.rc.Do(context.Background(), f.rc.B().Lrange().Key(fairQueue).Start(0).Stop(-1).Build()).AsStrSlice()
	require.NoError(f.t, err)
	return v
}

// deadlines returns the timeout set, member → score.
func (f *fairFixture) deadlines() map[string]int64 {
	v, err := f.rc.Do(context.Background(), f.rc.B().Zrange().Key(fairTimeout).Min("0").Max("-1").Withscores().Build()).AsZScores()
	require.NoError(f.t, err)
	out := map[string]int64{}
	for _, z := range v {
		out[z.Member] = int64(z.Score)
	}
	return out
}

// heard returns what each waiter's channel received since the last call, for the waiters
// that received something.
func (f *fairFixture) heard() map[string][]string {
	out := map[string][]string{}
	for w, msgs := range f.subs {
		if got := redistest.Published(f.t, f.rc, channel+":"+w, msgs); len(got) > 0 {
			out[w] = got
		}
	}
	if got := f.published(); len(got) > 0 {
		out["<lock channel>"] = got
	}
	return out
}

func isNil(t *testing.T, r rueidis.RedisResult, msg string) {
	t.Helper()
	assert.True(t, rueidis.IsRedisNil(r.Error()), "%s: want a nil reply, got %v", msg, r)
}

func TestFairAcquireScript(t *testing.T) { // FL-07: deadlines move by one wait when the first acquires
	f := newFairFixture(t)

	isNil(t, f.acquire(field), "free, empty queue: acquired")
	assert.Equal(t, map[string]string{field: "1"}, f.hash())
	assert.InDelta(t, 30000, f.pttl(), 1000)
	isNil(t, f.acquire(field), "re-entry")
	assert.Equal(t, map[string]string{field: "2"}, f.hash())
	assert.Empty(t, f.queue(), "a holder never queues")

	ttlB := must(f.acquire(waiterB).AsInt64())
	assert.InDelta(t, 30000, ttlB, 1000, "first waiter: the holder's PTTL")
	assert.Equal(t, []string{waiterB}, f.queue())
	assert.Equal(t, map[string]int64{waiterB: f.now + ttlB + fairWait}, f.deadlines())

	ttlC := must(f.acquire(waiterC).AsInt64())
	assert.Equal(t, ttlB+fairWait, ttlC, "next waiter: the last waiter's deadline less now")
	assert.Equal(t, []string{waiterB, waiterC}, f.queue())
	assert.Equal(t, map[string]int64{waiterB: f.now + ttlB + fairWait, waiterC: f.now + ttlB + 2*fairWait}, f.deadlines())

	again := must(f.acquire(waiterB).AsInt64())
	assert.InDelta(t, 30000, again, 1000, "already queued: the holder's PTTL")
	assert.Equal(t, []string{waiterB, waiterC}, f.queue(), "not queued twice")

	f.do("DEL", "lk")
	assert.Equal(t, int64(0), must(f.acquire(waiterC).AsInt64()), "free, but B is first: 0, C waits")
	assert.Empty(t, f.hash())

	isNil(t, f.acquire(waiterB), "free and first: acquired")
	assert.Equal(t, map[string]string{waiterB: "1"}, f.hash())
	assert.Equal(t, []string{waiterC}, f.queue())
	assert.Equal(t, map[string]int64{waiterC: f.now + ttlB + fairWait}, f.deadlines(), "the others' deadlines move one wait earlier")
	assert.Empty(t, f.heard(), "acquiring publishes nothing")
}

func TestFairAcquireScriptPurgesStaleWaiters(t *testing.T) {
	f := newFairFixture(t)
	f.do("RPUSH", fairQueue, waiterB, waiterC)
	f.do("ZADD", fairTimeout, ms(f.now-1), waiterB, ms(f.now+fairWait), waiterC)

	isNil(t, f.acquire(waiterC), "B's deadline passed: B is dropped, C is first and takes it")
	assert.Equal(t, map[string]string{waiterC: "1"}, f.hash())
	assert.Empty(t, f.queue())
	assert.Empty(t, f.deadlines())

	f.do("DEL", "lk")
	f.do("HSET", "lk", field, "1")
	f.do("PEXPIRE", "lk", "30000")
	f.do("RPUSH", fairQueue, waiterB, waiterC)
	f.do("ZADD", fairTimeout, ms(f.now), waiterB, ms(f.now-5), waiterC)
	ttl := must(f.acquire(waiterC).AsInt64())
	assert.InDelta(t, 30000, ttl, 1000,
		"a deadline at now is stale (B dropped), then C is first with a stale deadline too (dropped): it joins again, behind the holder")
	assert.Equal(t, []string{waiterC}, f.queue())
	assert.Equal(t, map[string]int64{waiterC: f.now + ttl + fairWait}, f.deadlines())
}

func TestFairTryAcquireScript(t *testing.T) {
	f := newFairFixture(t)
	try := func(w string) rueidis.RedisResult {
		// ARGV[3] is now and ARGV[4] the wait here, swapped against FairAcquire.
		return f.exec(FairTryAcquire, fairKeys, "10000", w, ms(f.now), ms(fairWait))
	}
	isNil(t, try(field), "free: acquired")
	assert.InDelta(t, 10000, f.pttl(), 1000)
	isNil(t, try(field), "re-entry")
	assert.Equal(t, map[string]string{field: "2"}, f.hash())
	assert.Equal(t, int64(1), must(try(waiterB).AsInt64()), "held: 1")
	assert.Empty(t, f.queue(), "never queues")

	f.do("DEL", "lk")
	f.do("RPUSH", fairQueue, waiterC, waiterD)
	f.do("ZADD", fairTimeout, ms(f.now+1000), waiterC, ms(f.now+1000+fairWait), waiterD)
	assert.Equal(t, int64(1), must(try(waiterB).AsInt64()), "free, but others queue first")
	isNil(t, try(waiterC), "free and first")
	assert.Equal(t, []string{waiterD}, f.queue())
	assert.Equal(t, map[string]int64{waiterD: f.now + 1000}, f.deadlines(), "D moved one wait (ARGV[4]) earlier")
}

func TestFairLeaveScript(t *testing.T) { // FL-05
	f := newFairFixture(t)
	leave := func(w string) {
		isNil(t, f.exec(FairLeave, []string{fairQueue, fairTimeout, "lk", channel}, w, ms(fairWait), "PUBLISH", "0"), "leave")
	}
	isNil(t, f.acquire(field), "holder")
	for _, w := range []string{waiterB, waiterC, waiterD} {
		f.acquire(w)
	}
	d := f.deadlines()

	leave(waiterC)
	assert.Equal(t, []string{waiterB, waiterD}, f.queue())
	assert.Equal(t, map[string]int64{waiterB: d[waiterB], waiterD: d[waiterD] - fairWait}, f.deadlines(),
		"the waiters behind move one wait earlier, those ahead keep theirs")
	leave(waiterC)
	assert.Equal(t, []string{waiterB, waiterD}, f.queue(), "leaving twice changes nothing")

	leave(waiterB)
	assert.Equal(t, []string{waiterD}, f.queue())
	assert.Empty(t, f.heard(), "the first left while the lock is held: its release will wake the next")

	f.acquire(waiterB)
	f.do("DEL", "lk")
	leave(waiterD)
	assert.Equal(t, []string{waiterB}, f.queue())
	assert.Equal(t, map[string][]string{waiterB: {"0"}}, f.heard(), "the first left a free lock: the next is woken")

	leave(waiterB)
	assert.Empty(t, f.queue())
	assert.Empty(t, f.deadlines())
	assert.Empty(t, f.heard(), "nobody left to wake")
}

func TestFairReleaseScript(t *testing.T) {
	f := newFairFixture(t)
	latch := func(id string) string { return "redisson_unlock_latch:{lk}:" + id }
	send := func(w, lease, id, attempt string, extra ...string) rueidis.RedisResult {
		args := append([]string{"0", lease, w, ms(f.now), "PUBLISH", "20000", attempt}, extra...)
		return f.exec(FairRelease, []string{"lk", fairQueue, fairTimeout, channel, latch(id)}, args...)
	}
	release := func(w, lease, id string, extra ...string) rueidis.RedisResult {
		return send(w, lease, id, "0", extra...)
	}
	retry := func(w, lease, id string) rueidis.RedisResult { return send(w, lease, id, "1") }
	isNil(t, f.acquire(field), "holder")
	isNil(t, f.acquire(field), "re-entry")
	f.acquire(waiterB)
	f.acquire(waiterC)

	isNil(t, release(waiterB, "0", "r0"), "not the holder")
	assert.Equal(t, int64(0), must(release(field, "7000", "r1").AsInt64()), "one hold left")
	assert.Equal(t, map[string]string{field: "1"}, f.hash())
	assert.InDelta(t, 7000, f.pttl(), 500, "the lease is set again")
	assert.Equal(t, "0", must(f.do("GET", latch("r1")).ToString()), "a partial release keeps its latch")
	assert.Equal(t, int64(0), must(retry(field, "0", "r1").AsInt64()), "same request retried: replayed")
	assert.Equal(t, map[string]string{field: "1"}, f.hash(), "a replay changes nothing")
	assert.Empty(t, f.heard())

	assert.Equal(t, int64(1), must(release(field, "0", "r2").AsInt64()), "released")
	assert.Empty(t, f.hash())
	assert.False(t, redistest.Exists(t, f.rc, latch("r2")), "a full release writes no latch")
	assert.Equal(t, map[string][]string{waiterB: {"0"}}, f.heard(), "only the first waiter's channel")
	assert.Equal(t, []string{waiterB, waiterC}, f.queue(), "the woken waiter takes itself out of the queue")

	isNil(t, retry(field, "0", "r2"), "a retried full release finds the key gone: nil, which its caller reads as released")
	assert.Equal(t, map[string][]string{waiterB: {"0"}}, f.heard(), "the first waiter is woken again")
	assert.False(t, redistest.Exists(t, f.rc, latch("r2")), "nothing to replay")

	f.do("ZADD", fairTimeout, ms(f.now-1), waiterB)
	f.do("HSET", "lk", field, "1")
	f.do("SET", latch("r4"), "0")
	assert.Equal(t, int64(1), must(release(field, "0", "r4", "PUBLISH").AsInt64()), "a first attempt does not look at the latch")
	assert.Equal(t, map[string][]string{waiterC: {"0", "0"}}, f.heard(), "B's deadline passed: purged, C woken, once per publish command")
	assert.Equal(t, []string{waiterC}, f.queue())
}

func TestFairForceReleaseScript(t *testing.T) {
	f := newFairFixture(t)
	force := func() int64 {
		return must(f.exec(FairForceRelease, []string{"lk", fairQueue, fairTimeout, channel}, "0", ms(f.now), "PUBLISH").AsInt64())
	}
	assert.Equal(t, int64(0), force(), "nothing to delete")
	f.acquire(waiterB)
	assert.Equal(t, int64(1), force(), "deleted")
	assert.Empty(t, f.heard(), "nobody waits")

	f.acquire(waiterB)
	f.acquire(waiterC)
	f.acquire(waiterD)
	assert.Equal(t, int64(1), force())
	assert.Empty(t, f.hash())
	assert.Equal(t, map[string][]string{waiterC: {"0"}}, f.heard(), "the first waiter is woken")
	assert.Equal(t, []string{waiterC, waiterD}, f.queue(), "the queue is kept")
	assert.Equal(t, int64(0), force())
	assert.Empty(t, f.heard())
}

func TestFairHeadDeadlineScript(t *testing.T) {
	f := newFairFixture(t)
	head := func() int64 { return must(f.exec(FairHeadDeadline, []string{fairQueue, fairTimeout}).AsInt64()) }
	assert.Equal(t, int64(-1), head(), "empty queue")
	f.acquire(field)
	ttl := must(f.acquire(waiterB).AsInt64())
	f.acquire(waiterC)
	assert.Equal(t, f.now+ttl+fairWait, head())
	f.do("ZREM", fairTimeout, waiterB)
	assert.Equal(t, int64(-1), head(), "first waiter without a deadline")
}
