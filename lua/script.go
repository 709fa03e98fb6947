package lua

import (
	"context"
	"crypto/sha1"
	"encoding/hex"

	"github.com/redis/rueidis"
)

// Script is one Lua script, an immutable value. Exec, ExecThen and ExecMulti are the one
// way goredisson runs a script: EVALSHA first, and EVAL with the source only for the calls
// that got NOSCRIPT, so the server caches each script on first use and no SCRIPT LOAD is
// sent per call or per node.
type Script struct {
	source    string
	sha1      string
	retryable bool
}

// newScript returns the script of source. A retryable script may be resent by the client
// after a connection error: it must be idempotent.
func newScript(source string, retryable bool) Script {
	sum := sha1.Sum([]byte(source))
	return Script{source: source, sha1: hex.EncodeToString(sum[:]), retryable: retryable}
}

// Source returns the script's Lua source.
func (s Script) Source() string { return s.source }

// SHA1 returns the hex SHA1 of the source, as EVALSHA takes it.
func (s Script) SHA1() string { return s.sha1 }

// Exec runs the script once on c with keys and args and returns its reply.
func (s Script) Exec(ctx context.Context, c rueidis.CommandClient, keys, args []string) rueidis.RedisResult {
	res := c.Do(ctx, s.command(c, keys, args, true))
	if noScript(res) {
		res = c.Do(ctx, s.command(c, keys, args, false))
	}
	return res
}

// ExecThen runs the script once on c pipelined with the commands that then builds, which
// the server runs right after the script on the same connection (then is called again
// when the script must be resent with EVAL, since sent commands cannot be reused). It
// returns the script's reply followed by one reply per command. On a cluster client every
// command must belong to the script's slot, or have no key.
func (s Script) ExecThen(ctx context.Context, c rueidis.CommandClient, keys, args []string, then func() rueidis.Commands) []rueidis.RedisResult {
	res, after := ExecCalls(ctx, c, []Call{{Script: s, Keys: keys, Args: args}}, then)
	return append(res[:1:1], after...)
}

// ExecMulti runs the script once per exec, all pipelined: EVALSHA first, then EVAL for the
// execs that got NOSCRIPT. Unlike rueidis.Lua.ExecMulti it sends no SCRIPT LOAD to every
// node before each batch.
func (s Script) ExecMulti(ctx context.Context, c rueidis.CommandClient, execs ...rueidis.LuaExec) []rueidis.RedisResult {
	res, _ := ExecCalls(ctx, c, s.Calls(execs...), nil)
	return res
}

// Calls returns one call of s per exec, for ExecCalls.
func (s Script) Calls(execs ...rueidis.LuaExec) []Call {
	calls := make([]Call, len(execs))
	for i, e := range execs {
		calls[i] = Call{Script: s, Keys: e.Keys, Args: e.Args}
	}
	return calls
}

// Call is one call of a script, for ExecCalls.
type Call struct {
	Script     Script
	Keys, Args []string
}

// ExecCalls runs each call once on c, all pipelined, followed by the commands that then
// builds (none when then is nil): EVALSHA first, then EVAL for the calls that got NOSCRIPT,
// followed by then's commands again (then is called once per round trip, since sent
// commands cannot be reused). It returns one reply per call, and the replies of then's
// commands of the last round trip. On a cluster client every command must belong to one
// slot; a client bound to one node takes any slot that node serves.
func ExecCalls(ctx context.Context, c rueidis.CommandClient, calls []Call, then func() rueidis.Commands) (res, after []rueidis.RedisResult) {
	send := func(idx []int, sha bool) []rueidis.RedisResult {
		cmds := make(rueidis.Commands, 0, len(idx)+1)
		for _, i := range idx {
			cmds = append(cmds, calls[i].Script.command(c, calls[i].Keys, calls[i].Args, sha))
		}
		if then != nil {
			cmds = append(cmds, then()...)
		}
		return c.DoMulti(ctx, cmds...)
	}
	all := make([]int, len(calls))
	for i := range all {
		all[i] = i
	}
	replies := send(all, true)
	res, after = replies[:len(calls)], replies[len(calls):]
	var again []int
	for i, r := range res {
		if noScript(r) {
			again = append(again, i)
		}
	}
	if len(again) == 0 {
		return res, after
	}
	replies = send(again, false)
	for j, i := range again {
		res[i] = replies[j]
	}
	return res, replies[len(again):]
}

// command builds EVALSHA (sha) or EVAL of the script.
func (s Script) command(c rueidis.CommandClient, keys, args []string, sha bool) rueidis.Completed {
	var cmd rueidis.Completed
	if sha {
		cmd = c.B().Evalsha().Sha1(s.sha1).Numkeys(int64(len(keys))).Key(keys...).Arg(args...).Build()
	} else {
		cmd = c.B().Eval().Script(s.source).Numkeys(int64(len(keys))).Key(keys...).Arg(args...).Build()
	}
	if s.retryable {
		cmd = cmd.ToRetryable()
	}
	return cmd
}

func noScript(r rueidis.RedisResult) bool {
	e, ok := rueidis.IsRedisErr(r.Error())
	return ok && e.IsNoScript()
}
