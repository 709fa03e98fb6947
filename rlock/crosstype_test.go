package rlock

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/goredisson/goredisson/internal/redistest"
)

// lockKinds returns, by name, the constructors of the lock types that share one hash layout
// (holder fields and their counts).
func lockKinds(c *Client) map[string]func(name string) *Lock {
	return map[string]func(name string) *Lock{
		"plain":         c.NewLock,
		"fair":          c.NewFairLock,
		"fenced":        func(name string) *Lock { return c.NewFencedLock(name).l },
		"spin":          func(name string) *Lock { return c.NewSpinLock(name, SpinBackoff{}) },
		"non-reentrant": c.NewNonReentrantLock,
	}
}

// TestCrossTypeRefused: a read-write lock's halves refuse a name that a plain, fair, fenced,
// spin or non-reentrant lock holds, with ErrWrongType naming the lock, and leave the holder's
// hash as it was; the holder still holds, and a third owner is still excluded. A lock on a name that
// holds another Redis type (a semaphore's counter) fails with ErrWrongType too, and so do the
// synchronizers on a lock's name (a latch's Delete deleted the lock).
func TestCrossTypeRefused(t *testing.T) {
	f := newFixture(t, Options{})
	for kind, newLock := range lockKinds(f.c) {
		t.Run(kind, func(t *testing.T) {
			name := f.name + ":" + kind
			holder := newLock(name)
			owner := NewOwner(f.base)
			require.NoError(t, holder.Lock(owner))
			before := redistest.HGetAll(t, f.rc, name)
			rw := f.c.NewReadWriteLock(name)
			for _, half := range []*Lock{rw.ReadLock(), rw.WriteLock()} {
				err := half.TryLock(NewOwner(f.base), 0, 0)
				require.ErrorIs(t, err, ErrWrongType)
				assert.ErrorContains(t, err, `"`+name+`"`)
				assert.ErrorContains(t, err, "held by a lock of another type")
				err = half.TryLock(NewOwner(f.base), 100*time.Millisecond, 0)
				assert.ErrorIs(t, err, ErrWrongType, "a wait does not change it")
			}
			assert.Equal(t, before, redistest.HGetAll(t, f.rc, name), "the holder's hash is untouched")
			assert.ErrorIs(t, f.c.NewLock(name).TryLock(NewOwner(f.base), 0, 0), ErrLocked, "still excluded")
			require.NoError(t, holder.Unlock(owner))
			assert.False(t, redistest.Exists(t, f.rc, name))
		})
	}

	t.Run("a semaphore's name", func(t *testing.T) {
		name := f.name + ":semaphore"
		s := f.c.NewSemaphore(name)
		_, err := s.TrySetPermits(f.base, 3)
		require.NoError(t, err)
		err = f.c.NewLock(name).TryLock(NewOwner(f.base), 0, 0)
		assert.ErrorIs(t, err, ErrWrongType)
		err = f.c.NewReadWriteLock(name).ReadLock().TryLock(NewOwner(f.base), 0, 0)
		assert.ErrorIs(t, err, ErrWrongType)
	})

	t.Run("synchronizers on a lock's name", func(t *testing.T) {
		name := f.name + ":held"
		owner := NewOwner(f.base)
		require.NoError(t, f.c.NewLock(name).Lock(owner))
		before := redistest.HGetAll(t, f.rc, name)
		latch := f.c.NewCountDownLatch(name)
		_, err := latch.Delete(f.base)
		assert.ErrorIs(t, err, ErrWrongType, "the latch's Delete does not delete a lock")
		assert.ErrorIs(t, latch.CountDown(f.base), ErrWrongType)
		assert.ErrorIs(t, f.c.NewSemaphore(name).TryAcquire(f.base, 1, 0), ErrWrongType)
		_, err = f.c.NewExpirableSemaphore(name).TryAcquire(f.base, 1, 0, time.Second)
		assert.ErrorIs(t, err, ErrWrongType)
		assert.Equal(t, before, redistest.HGetAll(t, f.rc, name), "the holder's hash is untouched")
		require.NoError(t, f.c.NewLock(name).Unlock(owner))
	})
}

// TestCrossTypeLockOnReadWrite: the plain, fair, fenced, spin and non-reentrant locks refuse
// a name that a read-write lock holds, with ErrWrongType, from TryLock and Lock alike and for
// the reader's own owner too (whose field looks like a lock holder's: it would otherwise
// re-enter the read and count it); an Unlock by that owner releases nothing; the hash is
// left as it was.
func TestCrossTypeLockOnReadWrite(t *testing.T) {
	f := newFixture(t, Options{})
	for kind, newLock := range lockKinds(f.c) {
		for _, half := range []string{"read", "write"} {
			t.Run(kind+" on a "+half, func(t *testing.T) {
				name := f.name + ":" + kind + ":" + half
				rw := f.c.NewReadWriteLock(name)
				hl := rw.ReadLock()
				if half == "write" {
					hl = rw.WriteLock()
				}
				holder := NewOwner(f.base)
				require.NoError(t, hl.Lock(holder))
				before := redistest.HGetAll(t, f.rc, name)
				l := newLock(name)
				for _, owner := range []context.Context{holder, NewOwner(f.base)} {
					err := l.TryLock(owner, 0, 0)
					require.ErrorIs(t, err, ErrWrongType)
					assert.ErrorContains(t, err, `"`+name+`"`)
					assert.ErrorContains(t, err, "held by a read-write lock")
					assert.ErrorIs(t, l.TryLock(owner, 100*time.Millisecond, 0), ErrWrongType, "a wait does not change it")
				}
				// The holder's Unlock through the other type releases nothing: a reader's
				// field is refused, a writer's is not this type's field.
				if half == "read" {
					assert.ErrorIs(t, l.Unlock(holder), ErrWrongType)
				} else {
					assert.ErrorIs(t, l.Unlock(holder), ErrNotHeld)
				}
				assert.Equal(t, before, redistest.HGetAll(t, f.rc, name), "the hash is untouched")
				require.NoError(t, hl.Unlock(holder))
				assert.False(t, redistest.Exists(t, f.rc, name))
			})
		}
	}
}

// TestNoUpgrade: an owner that holds the read lock asking for the write lock gets ErrUpgrade
// at once, from TryLock and Lock alike (Lock would otherwise wait for ever); a writer may
// still read, re-enter its write, and downgrade; another owner's read does not count.
func TestNoUpgrade(t *testing.T) {
	f := newFixture(t, Options{})
	rw := f.c.NewReadWriteLock(f.name)
	r, w := rw.ReadLock(), rw.WriteLock()
	reader := NewOwner(f.base)
	require.NoError(t, r.Lock(reader))
	start := time.Now()
	err := w.TryLock(reader, time.Minute, 0)
	require.ErrorIs(t, err, ErrUpgrade)
	assert.ErrorContains(t, err, `rlock: TryLock "`+f.name+`"`)
	assert.ErrorIs(t, w.Lock(reader), ErrUpgrade, "Lock does not wait for ever")
	assert.Less(t, time.Since(start), 10*time.Second)
	assert.ErrorIs(t, w.TryLock(NewOwner(f.base), 0, 0), ErrLocked, "another owner is refused as before")
	require.NoError(t, r.Unlock(reader))

	writer := NewOwner(f.base)
	require.NoError(t, w.Lock(writer))
	require.NoError(t, r.Lock(writer), "a writer may read")
	require.NoError(t, w.TryLock(writer, 0, 0), "and re-enter its write while it reads")
	require.NoError(t, w.Unlock(writer))
	require.NoError(t, w.Unlock(writer), "downgrade: the read stays")
	assert.ErrorIs(t, w.TryLock(writer, 0, 0), ErrUpgrade)
	require.NoError(t, r.Unlock(writer))
	assert.False(t, redistest.Exists(t, f.rc, f.name))
}
