package integration

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/goredisson/goredisson/rlock"
)

// TestInteropRWOnJavaLock: a Java thread holds getLock(name); Go's read and write locks on
// the same name refuse it with ErrWrongType and leave Java's hash as it was, so no third
// owner can take the lock while Java holds it (Redisson's own read-write lock would write
// its mode into that hash, and its read release would then delete Java's hold).
func TestInteropRWOnJavaLock(t *testing.T) {
	forEachVersion(t, func(t *testing.T, v string) {
		e := newEnv(t, v, 0)
		const name = "interopRW:on-java-lock"
		e.peer.Must(t, e.ctx, "J", "lock", name)
		before := e.hgetall(name)
		rw := e.goc.NewReadWriteLock(name)
		for _, half := range []*rlock.Lock{rw.ReadLock(), rw.WriteLock()} {
			assert.ErrorIs(t, half.TryLock(rlock.NewOwner(e.ctx), 0, 0), rlock.ErrWrongType)
		}
		assert.Equal(t, before, e.hgetall(name), "Java's hash is untouched")
		assert.ErrorIs(t, e.goc.NewLock(name).TryLock(rlock.NewOwner(e.ctx), 0, 0), rlock.ErrLocked)
		assert.Equal(t, "true", e.peer.Must(t, e.ctx, "J", "isheld", name))
		e.peer.Must(t, e.ctx, "J", "unlock", name)
		assert.Empty(t, e.hgetall(name))
	})
}

// TestInteropLockOnJavaRead: a Java thread holds getReadWriteLock(name).readLock(); Go's
// plain, fair, fenced and spin locks on the same name refuse it with ErrWrongType and leave
// Java's hash as it was, and Java's reader still reads.
func TestInteropLockOnJavaRead(t *testing.T) {
	forEachVersion(t, func(t *testing.T, v string) {
		e := newEnv(t, v, 0)
		const name = "interopLock:on-java-read"
		e.peer.Must(t, e.ctx, "J", "read.lock", name)
		before := e.hgetall(name)
		for kind, l := range map[string]*rlock.Lock{
			"plain": e.goc.NewLock(name),
			"fair":  e.goc.NewFairLock(name),
			"spin":  e.goc.NewSpinLock(name, rlock.SpinBackoff{}),
		} {
			assert.ErrorIs(t, l.TryLock(rlock.NewOwner(e.ctx), 0, 0), rlock.ErrWrongType, kind)
		}
		_, err := e.goc.NewFencedLock(name).TryLock(rlock.NewOwner(e.ctx), 0, 0)
		assert.ErrorIs(t, err, rlock.ErrWrongType, "fenced")
		assert.Equal(t, before, e.hgetall(name), "Java's hash is untouched")
		assert.Equal(t, "true", e.peer.Must(t, e.ctx, "J", "read.islocked", name))
		e.peer.Must(t, e.ctx, "J", "read.unlock", name)
		assert.Empty(t, e.hgetall(name))
	})
}
