package renewal

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/goredisson/goredisson/internal/keys"
	"github.com/goredisson/goredisson/lua"
)

// renewSynced makes one Sync call per hash slot in a cluster and one in all otherwise, each
// with the calls of its chunks in order, and reports a failed call for every chunk of it.
func TestRenewSyncedGroupsBySlot(t *testing.T) {
	var chunks [][]item
	for _, names := range [][]string{{"{x}1", "{x}2"}, {"{x}3"}, {"{y}1"}, {"{z}1", "{z}2"}} {
		var c []item
		for _, n := range names {
			c = append(c, item{e: &entry{entryKey: entryKey{name: n}}, hold: hold{field: "c:1"}})
		}
		chunks = append(chunks, c)
	}
	for _, tc := range []struct {
		cluster bool
		want    map[string][]int // key of each Sync call → locks of each of its calls
	}{
		{true, map[string][]int{"{x}1": {2, 1}, "{y}1": {1}, "{z}1": {2}}},
		{false, map[string][]int{"{x}1": {2, 1, 1, 2}}},
	} {
		var mu sync.Mutex
		got := map[string][]int{}
		fail := errors.New("down")
		syncFn := func(_ context.Context, s lua.Script, key string, execs []rueidis.LuaExec) ([]rueidis.RedisResult, error) {
			assert.Equal(t, lua.Renew.SHA1(), s.SHA1())
			mu.Lock()
			defer mu.Unlock()
			out := make([]rueidis.RedisResult, len(execs))
			for i, e := range execs {
				got[key] = append(got[key], len(e.Keys))
				if tc.cluster {
					assert.Equal(t, keys.Slot(key), keys.Slot(e.Keys[0]), "one slot per Sync call")
				}
				out[i] = rueidis.NewErrorResult(fail)
			}
			return out, nil
		}
		res := renewSynced(context.Background(), syncFn, tc.cluster, lua.RenewRead, time.Second, chunks)
		assert.Equal(t, tc.want, got, "cluster %v", tc.cluster)
		for i, r := range res {
			assert.ErrorIs(t, r.err, fail, "chunk %d", i)
		}
	}
}

// Read holds go in Sync calls of their own, with lua.RenewRead and each name followed by its
// timeout keys' prefix.
func TestRenewSyncedSeparatesReadHolds(t *testing.T) {
	plain := []item{{e: &entry{entryKey: entryKey{name: "a"}}, hold: hold{field: "c:1"}}}
	read := []item{
		{e: &entry{entryKey: entryKey{name: "a", read: true}}, hold: hold{field: "c:1"}},
		{e: &entry{entryKey: entryKey{name: "a", read: true}}, hold: hold{field: "c:2"}},
	}
	var calls []string
	var mu sync.Mutex
	syncFn := func(_ context.Context, s lua.Script, key string, execs []rueidis.LuaExec) ([]rueidis.RedisResult, error) {
		mu.Lock()
		defer mu.Unlock()
		require.Len(t, execs, 1)
		switch s.SHA1() {
		case lua.Renew.SHA1():
			calls = append(calls, "renew")
			assert.Equal(t, rueidis.LuaExec{Keys: []string{"a"}, Args: []string{"1000", "c:1"}}, execs[0])
		case lua.RenewRead.SHA1():
			calls = append(calls, "read")
			assert.Equal(t, rueidis.LuaExec{Keys: []string{"a", "{a}", "a", "{a}"}, Args: []string{"1000", "c:1", "c:2"}}, execs[0])
		}
		return []rueidis.RedisResult{rueidis.NewErrorResult(errors.New("down"))}, nil
	}
	renewSynced(context.Background(), syncFn, false, lua.RenewRead, time.Second, [][]item{plain, read})
	assert.ElementsMatch(t, []string{"renew", "read"}, calls)
}

// A Sync call that was not made (its replies nil, its error the reason) fails every chunk
// it carried with that error: none is left without a result.
func TestRenewSyncedCallNotMade(t *testing.T) {
	chunks := [][]item{
		{{e: &entry{entryKey: entryKey{name: "a"}}, hold: hold{field: "c:1"}}},
		{{e: &entry{entryKey: entryKey{name: "b"}}, hold: hold{field: "c:1"}}},
	}
	notMade := errors.New("no turn before the deadline")
	syncFn := func(context.Context, lua.Script, string, []rueidis.LuaExec) ([]rueidis.RedisResult, error) {
		return nil, notMade
	}
	res := renewSynced(context.Background(), syncFn, false, lua.RenewRead, time.Second, chunks)
	require.Len(t, res, 2)
	for i, r := range res {
		assert.ErrorIs(t, r.err, notMade, "chunk %d", i)
	}
}
