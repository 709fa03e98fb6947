package lua

import (
	"context"
	"testing"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/goredisson/goredisson/internal/redistest"
)

// ExecCalls runs different scripts in one pipeline followed by then's commands; the calls
// whose script the server lacks are sent again with EVAL, followed by then's commands
// again, and each reply is in its call's place.
func TestExecCalls(t *testing.T) {
	srv := redistest.Start(t)
	rc := srv.Client(t)
	ctx := context.Background()
	require.NoError(t, rc.Do(ctx, rc.B().ScriptLoad().Script(Acquire.Source()).Build()).Error(), "Acquire cached, Release not")
	thens := 0
	then := func() rueidis.Commands {
		thens++
		return rueidis.Commands{rc.B().Incr().Key("then").Build()}
	}
	res, after := ExecCalls(ctx, rc, []Call{
		{Script: Acquire, Keys: []string{"a"}, Args: []string{"30000", field}},
		{Script: Release, Keys: []string{"b", "redisson_lock__channel:{b}", "latch"}, Args: []string{"0", "30000", field, "PUBLISH", "1000", "0"}},
		{Script: Acquire, Keys: []string{"a"}, Args: []string{"30000", other}},
	}, then)
	require.Len(t, res, 3)
	assert.True(t, rueidis.IsRedisNil(res[0].Error()), "a acquired")
	assert.True(t, rueidis.IsRedisNil(res[1].Error()), "b not held: nil, run with EVAL")
	ttl, err := res[2].AsInt64()
	require.NoError(t, err, "a held by the first call: its TTL")
	assert.Positive(t, ttl)
	require.Len(t, after, 1)
	n, err := after[0].AsInt64()
	require.NoError(t, err)
	assert.Equal(t, int64(2), n, "then's commands sent after each round trip")
	assert.Equal(t, 2, thens)
}
