package rlock

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/goredisson/goredisson/internal/redistest"
	"github.com/goredisson/goredisson/lua"
)

// permFixture returns a fixture whose Client logs in as an ACL user with rules (on a server
// of its own), and an admin client of the default user.
func permFixture(t *testing.T, rules ...string) (*fixture, rueidis.Client) {
	t.Helper()
	srv := redistest.StartProcess(t, redistest.ProcessOptions{})
	admin := srv.Client(t)
	redistest.ApplyACL(t, admin, append([]string{"ACL", "SETUSER", "u", "reset", "on", ">p", "+ping", "+client|tracking", "+cluster|slots"}, rules...))
	rc := srv.Client(t, func(o *rueidis.ClientOption) { o.Username, o.Password = "u", "p" })
	c, err := New(t.Context(), rc, Options{})
	require.NoError(t, err)
	t.Cleanup(c.Close)
	name := redistest.Name(t)
	base := redistest.Context(t, testTimeout)
	return &fixture{srv: srv, c: c, rc: rc, name: name, l: c.NewLock(name), base: base, ctx: NewOwner(base)}, admin
}

// lockRules grant everything a Lock needs but PUBLISH.
var lockRules = []string{"+evalsha", "+exists", "+hexists", "+hget", "+hincrby", "+pexpire", "+pttl", "+get", "+set", "+del", "+subscribe", "+unsubscribe", "~*", "&*"}

// TestNoPermissionNamesTheRefusal: a refused publish in the release script fails Unlock at
// once with ErrNoPermission, naming the lock and the command, wrapping Redis's reply, and
// leaves the lock held; other errors are not taken for refusals.
func TestNoPermissionNamesTheRefusal(t *testing.T) {
	f, admin := permFixture(t, append(lockRules, "+eval")...)
	require.NoError(t, f.l.Lock(f.ctx))
	err := f.l.Unlock(f.ctx)
	require.ErrorIs(t, err, ErrNoPermission)
	var re *rueidis.RedisError
	require.True(t, errors.As(err, &re))
	assert.True(t, redistest.Exists(t, admin, f.name), "nothing was released")
	assert.NotErrorIs(t, f.l.Unlock(NewOwner(f.base)), ErrNoPermission, "not held is no refusal")

	redistest.Require(t, admin, redistest.ScriptACLCheck) // the probe names the refusal
	assert.Contains(t, err.Error(), `rlock: Unlock "`+f.name+`": no permission (Redis ACL): the user may not PUBLISH on `+f.channel())
}

// TestNoPermissionWithoutProbe: when the probe itself is refused (no EVAL), the error still
// matches ErrNoPermission and carries Redis's reply.
func TestNoPermissionWithoutProbe(t *testing.T) {
	f, admin := permFixture(t, lockRules...)
	for _, s := range []lua.Script{lua.Acquire, lua.Release} { // EVALSHA finds them: no EVAL needed
		redistest.Do(t, admin, admin.B().ScriptLoad().Script(s.Source()).Build())
	}
	require.NoError(t, f.l.Lock(f.ctx))
	err := f.l.Unlock(f.ctx)
	require.ErrorIs(t, err, ErrNoPermission)
	var re *rueidis.RedisError
	require.True(t, errors.As(err, &re))
	assert.Contains(t, err.Error(), `rlock: Unlock "`+f.name+`": no permission (Redis ACL): `+re.Error(), "Redis's reply, in its server line's words")
	assert.NotContains(t, err.Error(), "may not")
}

// TestNoPermissionNewTypes: the refusals of the fair and read-write locks, the expirable
// semaphore and a MultiLock's members go through the probe too, and name what was refused
// (once: a member's error is not probed twice).
func TestNoPermissionNewTypes(t *testing.T) {
	all := []string{"+evalsha", "+eval", "+exists", "+hexists", "+hget", "+hset", "+hincrby", "+hdel",
		"+hlen", "+hkeys", "+pexpire", "+pttl", "+get", "+set", "+del", "+incrby", "+decrby", "+lindex",
		"+lpop", "+rpush", "+lrange", "+lrem", "+zadd", "+zrem", "+zscore", "+zrange", "+zrangebyscore",
		"+zcard", "+zincrby", "+publish", "+subscribe", "+unsubscribe", "~*", "&*"}
	for _, tc := range []struct {
		name, without, op, says string
		run                     func(f *fixture) error
	}{
		{"fair lock without LINDEX", "+lindex", "Lock", "run LINDEX", func(f *fixture) error {
			return f.c.NewFairLock(f.name).Lock(f.ctx)
		}},
		{"read lock without HSET", "+hset", "Lock", "run HSET", func(f *fixture) error {
			return f.c.NewReadWriteLock(f.name).ReadLock().Lock(f.ctx)
		}},
		{"expirable semaphore without ZRANGEBYSCORE", "+zrangebyscore", "AvailablePermits", "run ZRANGEBYSCORE", func(f *fixture) error {
			_, err := f.c.NewExpirableSemaphore(f.name).AvailablePermits(f.base)
			return err
		}},
		{"multilock without HINCRBY", "+hincrby", "Lock", "run HINCRBY", func(f *fixture) error {
			m, err := NewMultiLock(f.l)
			require.NoError(t, err)
			return m.Lock(f.ctx)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, admin := permFixture(t, slices.DeleteFunc(slices.Clone(all), func(r string) bool { return r == tc.without })...)
			err := tc.run(f)
			require.ErrorIs(t, err, ErrNoPermission)
			assert.Contains(t, err.Error(), "rlock: "+tc.op+` "`)
			assert.Contains(t, err.Error(), f.name)
			assert.Equal(t, 1, strings.Count(err.Error(), "no permission (Redis ACL)"), "%v", err)
			redistest.Require(t, admin, redistest.ScriptACLCheck) // the probe names the refusal
			assert.Contains(t, err.Error(), "the user may not "+tc.says)
		})
	}
}
