package rlock

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/goredisson/goredisson/internal/redistest"
)

// An Unlock with the wrong owner of the same client is loud: the error says another owner
// of this client holds the lock, a warning is logged once per call, and the real hold is
// untouched.
func TestUnlockByAnotherOwnerOfThisClient(t *testing.T) {
	var logs redistest.SyncBuffer
	f := newFixture(t, Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	holder, wrong := f.owners()
	require.NoError(t, f.l.Lock(holder))

	err := f.l.Unlock(wrong)
	require.ErrorIs(t, err, ErrNotHeld)
	assert.Contains(t, err.Error(), "held by another owner of this client")
	assert.Contains(t, err.Error(), `Unlock "`+f.name+`"`)
	assert.Equal(t, 1, strings.Count(logs.String(), "Unlock by an owner that does not hold the lock"))
	assert.Equal(t, map[string]string{f.c.field(mustOwner(t, holder)): "1"}, redistest.HGetAll(t, f.rc, f.name),
		"the real hold is untouched")

	err = f.l.Unlock(wrong)
	require.ErrorIs(t, err, ErrNotHeld)
	assert.Equal(t, 2, strings.Count(logs.String(), "Unlock by an owner that does not hold the lock"), "one warning per call")

	require.NoError(t, f.l.Unlock(holder))
	err = f.l.Unlock(wrong)
	require.ErrorIs(t, err, ErrNotHeld)
	assert.NotContains(t, err.Error(), "another owner", "nobody holds it now")
}

// Every error of a lock call names the call and the lock, and matches its sentinel.
func TestErrorsNameCallAndLock(t *testing.T) {
	f := newFixture(t, Options{})
	l, name, a := f.l, f.name, f.ctx
	require.NoError(t, f.otherLock(t).Lock(NewOwner(f.base)))
	cancelled, cancel := context.WithCancel(a)
	cancel()
	held := func() error {
		_, _, err := l.Held(a)
		return err
	}

	for _, tc := range []struct {
		call     string
		err      error
		sentinel error
		text     string // the start of the message; the whole of it when whole is set
		whole    bool
	}{
		{"TryLock held", l.TryLock(a, 0, 0), ErrLocked, `rlock: TryLock "` + name + `": held by another owner`, false},
		{"TryLock wait", l.TryLock(a, -1, 0), ErrInvalidWait, `rlock: TryLock "` + name + `": invalid wait`, false},
		{"LockFor lease", l.LockFor(a, 0), ErrInvalidLease, `rlock: LockFor "` + name + `": invalid lease`, false},
		{"Unlock", l.Unlock(a), ErrNotHeld, `rlock: Unlock "` + name + `": not held by this owner`, false},
		{"Lock no owner", l.Lock(f.base), ErrNoOwner, `rlock: Lock "` + name + `": context carries no owner`, false},
		{"Lock empty name", f.c.NewLock("").Lock(a), ErrEmptyName, `rlock: Lock "": empty lock name`, false},
		{"TryDo held", l.TryDo(a, 0, func(context.Context) error { return nil }), ErrLocked,
			`rlock: TryDo "` + name + `": held by another owner`, false},
		{"Held", held(), ErrNotHeld, `rlock: Held "` + name + `": not held by this owner`, true},
		{"Lock cancelled", l.Lock(cancelled), context.Canceled, `rlock: Lock "` + name + `": context canceled`, true},
	} {
		t.Run(tc.call, func(t *testing.T) {
			assert.ErrorIs(t, tc.err, tc.sentinel)
			require.Error(t, tc.err)
			if tc.whole {
				assert.EqualError(t, tc.err, tc.text)
			} else {
				assert.True(t, strings.HasPrefix(tc.err.Error(), tc.text), "%q starts with %q", tc.err, tc.text)
			}
		})
	}
}

func TestInvalidOptionNamesField(t *testing.T) {
	rc := redistest.Shared(t).Client(t)
	ctx := redistest.Context(t, testTimeout)
	for _, tc := range []struct {
		opts  Options
		field string
	}{
		{Options{WatchdogTimeout: -time.Second}, "WatchdogTimeout"},
		{Options{WatchdogTimeout: time.Millisecond}, "WatchdogTimeout"},
		{Options{RenewBatchSize: -1}, "RenewBatchSize"},
		{Options{UnlockLatchTTL: -1}, "UnlockLatchTTL"},
		{Options{ReleaseTimeout: -1}, "ReleaseTimeout"},
		{Options{ReplicaSync: ReplicaSyncMode(9)}, "ReplicaSync"},
		{Options{ReplicaSync: -1}, "ReplicaSync"},
		{Options{ReplicaSyncTimeout: -time.Second}, "ReplicaSyncTimeout"},
		{Options{ReplicaSyncTimeout: 500 * time.Microsecond}, "ReplicaSyncTimeout"},
		{Options{HoldWarning: -1}, "HoldWarning"},
		{Options{PubSub: PubSubMode(9)}, "PubSub"},
	} {
		t.Run(tc.field, func(t *testing.T) {
			_, err := New(ctx, rc, tc.opts)
			assert.ErrorIs(t, err, ErrInvalidOptions, "%+v", tc.opts)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.field)
		})
	}
}

// The causes of a lost hold are rlock sentinels.
func TestLostCausesAreRlockSentinels(t *testing.T) {
	// held locks f's lock and returns its Held context.
	held := func(t *testing.T, f *fixture) context.Context {
		require.NoError(t, f.l.Lock(f.ctx))
		return mustHeld(t, f.l, f.ctx)
	}

	t.Run("force-unlocked", func(t *testing.T) {
		f := newFixture(t, Options{})
		work := held(t, f)
		_, err := f.l.ForceUnlock(f.ctx)
		require.NoError(t, err)
		<-work.Done()
		cause := context.Cause(work)
		assert.ErrorIs(t, cause, ErrLockLost)
		assert.ErrorIs(t, cause, ErrForceUnlocked)
		assert.False(t, errors.Is(cause, ErrReleased))
	})

	t.Run("closed", func(t *testing.T) {
		f := newFixture(t, Options{})
		work := held(t, f)
		f.c.Close()
		<-work.Done()
		assert.ErrorIs(t, context.Cause(work), ErrLockLost)
		assert.ErrorIs(t, context.Cause(work), ErrClosed)
	})
}
