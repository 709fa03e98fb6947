package rlock

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/goredisson/goredisson/internal/redistest"
)

// TestRefusalOnEveryServerLine: a refusal by the ACL is recognised in the words of each
// server line, for a command called directly and for one a script called; other error
// replies are not taken for refusals.
func TestRefusalOnEveryServerLine(t *testing.T) {
	for _, msg := range []string{
		"NOPERM User u has no permissions to run the 'publish' command",                                           // direct call, 6.2+
		"NOPERM this user has no permissions to access one of the channels used as arguments",                     // 6.2
		"ERR The user executing the script can't run this command or subcommand script: f, on @user_script:1.",    // 7.0
		"ERR The user executing the script can't access at least one of the keys mentioned in the command script", // 7.0
		"ACL failure in script: User u has no permissions to run the 'publish' command script: f, on @user_script:1.",
		"ERR ACL failure in script: User u has no permissions to run the 'hincrby' command script: f",   // 7.2, 7.4
		"ERR ACL failure in script: No permissions to access a key script: f, on @user_script:2.",       // 7.2+, Valkey 8
		"NOPERM ACL failure in script: User u has no permissions to access the 'abc' key script: f, on", // NOPERM code
	} {
		assert.True(t, refusal(msg), "%q is a refusal", msg)
	}
	for _, msg := range []string{
		"WRONGTYPE Operation against a key holding the wrong kind of value",
		"ERR Error running script (call to f_1): @user_script:9: ERR value is not an integer or out of range",
		"LOADING Redis is loading the dataset in memory",
		"ERR unknown command 'EVALSHA_RO', with args beginning with:",
	} {
		assert.False(t, refusal(msg), "%q is no refusal", msg)
	}
}

// TestGroupEndsOnWhatWaitingCannotChange: a MultiLock whose member's key holds another type
// (WRONGTYPE on every attempt) returns that error at once from Lock, which otherwise waits
// until ctx ends; a RedLock returns ErrNoQuorum at once when such members leave no majority,
// and acquires when the others still make one. Nothing is left held.
func TestGroupEndsOnWhatWaitingCannotChange(t *testing.T) {
	srvs := startServers(t, 3)
	name := redistest.Name(t)
	const patience = 20 * time.Second // far beyond an answer at once, well inside the test timeout
	spoil := func(i int) {
		admin := srvs[i].Client(t)
		redistest.Do(t, admin, admin.B().Set().Key(name).Value("not a lock").Build())
	}
	spoil(1)

	t.Run("MultiLock", func(t *testing.T) {
		m, err := NewMultiLock(groupOn(t, srvs, name, Options{})...)
		require.NoError(t, err)
		ctx, cancel := context.WithTimeout(NewOwner(t.Context()), patience)
		defer cancel()
		err = m.Lock(ctx)
		require.Error(t, err)
		assert.NoError(t, ctx.Err(), "Lock returned before ctx ended: %v", err)
		assert.ErrorContains(t, err, "WRONGTYPE")
		assert.NotErrorIs(t, err, context.DeadlineExceeded)
		err = m.TryLock(ctx, patience, 0)
		assert.NoError(t, ctx.Err(), "TryLock returned before its wait: %v", err)
		assert.ErrorContains(t, err, "WRONGTYPE")
		// A try still running when Lock gave up is abandoned and gives back its hold when
		// its reply comes: wait for that.
		first := srvs[0].Client(t)
		assert.True(t, redistest.Poll(5*time.Second, time.Millisecond, func() bool { return !redistest.Exists(t, first, name) }),
			"the first member was given back")
	})

	t.Run("RedLock without a majority", func(t *testing.T) {
		spoil(2)
		defer func() {
			admin := srvs[2].Client(t)
			redistest.Do(t, admin, admin.B().Del().Key(name).Build())
		}()
		r, err := NewRedLock(groupOn(t, srvs, name, Options{})...)
		require.NoError(t, err)
		ctx, cancel := context.WithTimeout(NewOwner(t.Context()), patience)
		defer cancel()
		_, err = r.Lock(ctx)
		require.ErrorIs(t, err, ErrNoQuorum)
		assert.NoError(t, ctx.Err(), "Lock returned before ctx ended: %v", err)
		assert.ErrorContains(t, err, "WRONGTYPE")
		// A try still running when Lock gave up is abandoned and gives back its hold when
		// its reply comes: wait for that.
		first := srvs[0].Client(t)
		assert.True(t, redistest.Poll(5*time.Second, time.Millisecond, func() bool { return !redistest.Exists(t, first, name) }),
			"the first member was given back")
	})

	t.Run("RedLock with a majority", func(t *testing.T) {
		r, err := NewRedLock(groupOn(t, srvs, name, Options{})...)
		require.NoError(t, err)
		ctx, cancel := context.WithTimeout(NewOwner(t.Context()), patience)
		defer cancel()
		_, err = r.Lock(ctx)
		require.NoError(t, err)
		require.NoError(t, r.Unlock(ctx))
	})
}
