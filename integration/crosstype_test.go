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
