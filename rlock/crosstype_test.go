package rlock

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/goredisson/goredisson/internal/redistest"
)

// TestCrossTypeRefused: a read-write lock's halves refuse a name that a plain, fair, fenced
// or spin lock holds, with ErrWrongType naming the lock, and leave the holder's hash as it
// was; the holder still holds, and a third owner is still excluded. A lock on a name that
// holds another Redis type (a semaphore's counter) fails with ErrWrongType too.
func TestCrossTypeRefused(t *testing.T) {
	f := newFixture(t, Options{})
	holders := map[string]func(name string) *Lock{
		"plain":  f.c.NewLock,
		"fair":   f.c.NewFairLock,
		"fenced": func(name string) *Lock { return f.c.NewFencedLock(name).l },
		"spin":   func(name string) *Lock { return f.c.NewSpinLock(name, SpinBackoff{}) },
	}
	for kind, newLock := range holders {
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
}
