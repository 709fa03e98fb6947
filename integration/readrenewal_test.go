package integration

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/goredisson/goredisson/internal/redistest"
	"github.com/goredisson/goredisson/rlock"
)

// TestInteropRedisson3ReadRenewal: Redisson 3.52.0 (3.44.0 to 3.52.0) fails to renew the
// timeout keys of a reader that holds two read-locked names, one of them twice. Without
// RenewOtherReaders the Java reader's keys expire while it reads, and a Go reader's release
// then deletes the lock: a writer gets in (logged, not asserted: it is Redisson's bug).
// With RenewOtherReaders the Go reader's watchdog keeps the Java reader's keys alive, so its
// release leaves Java's read and a writer is refused.
func TestInteropRedisson3ReadRenewal(t *testing.T) {
	const watchdog = time.Second
	for _, renewOthers := range []bool{false, true} {
		t.Run(map[bool]string{false: "default", true: "RenewOtherReaders"}[renewOthers], func(t *testing.T) {
			e := newEnv(t, "3.52.0", watchdog) // a version with the read-lock renewal bug (javapeer.ReadLockRenewal)
			goc, err := rlock.New(e.ctx, e.srv.Client(t), rlock.Options{WatchdogTimeout: watchdog, RenewOtherReaders: renewOthers})
			require.NoError(t, err)
			t.Cleanup(goc.Close)
			const a, b = "interopRW:renew3x:a", "interopRW:renew3x:b"
			jf := e.javaField("J")
			e.peer.Must(t, e.ctx, "J", "read.lock", a)
			e.peer.Must(t, e.ctx, "J", "read.lock", a)
			e.peer.Must(t, e.ctx, "J", "read.lock", b)

			r := goc.NewReadWriteLock(a).ReadLock()
			g := rlock.NewOwner(e.ctx)
			require.NoError(t, r.Lock(g))
			start := time.Now()
			require.True(t, redistest.Poll(20*time.Second, 50*time.Millisecond, func() bool {
				return time.Since(start) > 3*watchdog
			}))
			ttl1, ttl2 := e.pttl(rwTimeoutKey(a, jf, 1)), e.pttl(rwTimeoutKey(a, jf, 2))
			javaAlive := ttl1 > 0 && ttl2 > 0
			require.NoError(t, r.Unlock(g))
			after := e.hgetall(a)
			w := goc.NewReadWriteLock(a).WriteLock()
			writer := rlock.NewOwner(e.ctx)
			werr := w.TryLock(writer, 0, 0)
			if werr == nil {
				require.NoError(t, w.Unlock(writer))
			}
			if !renewOthers {
				t.Logf("Redisson's own renewal, after %v: the Java reader's timeout keys' PTTL %d and %d; after the Go reader left the lock was %v, and a writer got in: %v",
					3*watchdog, ttl1, ttl2, after, werr == nil)
				return
			}
			assert.True(t, javaAlive, "the Go reader's watchdog kept the Java reader's timeout keys alive")
			assert.Equal(t, map[string]string{"mode": "read", jf: "2"}, e.hgetall(a), "the Go release left Java's read")
			assert.ErrorIs(t, werr, rlock.ErrLocked, "a writer is refused while Java reads")
			assert.Equal(t, "true", e.peer.Must(t, e.ctx, "J", "read.isheld", a))
			e.peer.Must(t, e.ctx, "J", "read.unlock", a)
			e.peer.Must(t, e.ctx, "J", "read.unlock", a)
			e.peer.Must(t, e.ctx, "J", "read.unlock", b)
		})
	}
}
