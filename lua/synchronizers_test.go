package lua

import (
	"context"
	"testing"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"

	"github.com/goredisson/goredisson/internal/redistest"
)

// syncFixture is a fresh server with a listener on one channel, for the scripts of the
// latch and the semaphore on key "k".
type syncFixture struct {
	t       *testing.T
	rc      rueidis.Client
	channel string
	msgs    <-chan string
}

func newSyncFixture(t *testing.T, channel string) *syncFixture {
	srv := redistest.Start(t)
	return &syncFixture{t: t, rc: srv.Client(t), channel: channel, msgs: srv.Listen(t, channel)}
}

func (f *syncFixture) int(s Script, keys []string, args ...string) int64 {
	f.t.Helper()
	return must(s.Exec(context.Background(), f.rc, keys, args).AsInt64())
}

func (f *syncFixture) get() string {
	v, err := f.rc.Do(context.Background(), f.rc.B().Get().Key("k").Build()).ToString()
	if rueidis.IsRedisNil(err) {
		return "<nil>"
	}
	return must(v, err)
}

func (f *syncFixture) published() []string {
	return redistest.Published(f.t, f.rc, f.channel, f.msgs)
}

func TestLatchScripts(t *testing.T) {
	const ch = "redisson_countdownlatch__channel__{k}"
	f := newSyncFixture(t, ch)
	ks := []string{"k", ch}
	countDown := func() {
		err := LatchCountDown.Exec(context.Background(), f.rc, ks, []string{"0", "PUBLISH"}).Error()
		assert.True(t, rueidis.IsRedisNil(err), "countDown replies nil: %v", err)
	}

	assert.Equal(t, int64(1), f.int(TrySet, ks, "1", "2", "PUBLISH"))
	assert.Equal(t, "2", f.get())
	assert.Equal(t, []string{"1"}, f.published())
	assert.Equal(t, int64(0), f.int(TrySet, ks, "1", "5", "PUBLISH"), "already set")
	assert.Equal(t, "2", f.get())
	assert.Empty(t, f.published())

	countDown()
	assert.Equal(t, "1", f.get())
	assert.Empty(t, f.published())
	countDown()
	assert.Equal(t, "<nil>", f.get(), "deleted at zero")
	assert.Equal(t, []string{"0"}, f.published())
	countDown()
	assert.Equal(t, "<nil>", f.get(), "below zero: deleted, nothing published")
	assert.Empty(t, f.published())

	assert.Equal(t, int64(1), f.int(TrySet, ks, "1", "3", "PUBLISH", "PUBLISH"))
	assert.Equal(t, []string{"1", "1"}, f.published(), "once per publish command")
	assert.Equal(t, int64(1), f.int(LatchDelete, ks, "1", "PUBLISH"))
	assert.Equal(t, []string{"1"}, f.published())
	assert.Equal(t, int64(0), f.int(LatchDelete, ks, "1", "PUBLISH"), "missing")
	assert.Empty(t, f.published())
}

func TestSemaphoreScripts(t *testing.T) {
	const ch = "redisson_sc:{k}"
	f := newSyncFixture(t, ch)
	ks := []string{"k", ch}

	assert.Equal(t, int64(0), f.int(SemaphoreTryAcquire, ks[:1], "1"), "no key, no permits")
	assert.Equal(t, int64(1), f.int(TrySet, ks, "3", "3", "PUBLISH"))
	assert.Equal(t, []string{"3"}, f.published())
	assert.Equal(t, int64(0), f.int(TrySet, ks, "9", "9", "PUBLISH"), "already set")
	assert.Equal(t, "3", f.get())

	assert.Equal(t, int64(1), f.int(SemaphoreTryAcquire, ks[:1], "2"))
	assert.Equal(t, "1", f.get())
	assert.Equal(t, int64(0), f.int(SemaphoreTryAcquire, ks[:1], "2"), "too few")
	assert.Equal(t, "1", f.get())

	assert.Equal(t, int64(3), f.int(SemaphoreRelease, ks, "2", "PUBLISH"))
	assert.Equal(t, []string{"3"}, f.published(), "the new count")
	assert.Equal(t, int64(5), f.int(SemaphoreAddPermits, ks, "2", "PUBLISH"))
	assert.Equal(t, int64(4), f.int(SemaphoreAddPermits, ks, "-1", "PUBLISH"))
	assert.Equal(t, []string{"5", "4"}, f.published())

	assert.Equal(t, int64(4), f.int(SemaphoreDrain, ks[:1]))
	assert.Equal(t, "0", f.get())
	assert.Empty(t, f.published(), "drain publishes nothing")

	f.rc.Do(context.Background(), f.rc.B().Del().Key("k").Build())
	assert.Equal(t, int64(0), f.int(SemaphoreDrain, ks[:1]))
	assert.Equal(t, "<nil>", f.get(), "drain leaves a missing key missing")
	assert.Equal(t, int64(2), f.int(SemaphoreAddPermits, ks, "2", "PUBLISH"), "from a missing key")
	assert.Equal(t, []string{"2"}, f.published())
}
