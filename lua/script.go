package lua

import (
	"context"
	"crypto/sha1"
	"encoding/hex"

	"github.com/redis/rueidis"
)

// Script is one Lua script: its source and SHA1, for callers that build EVALSHA themselves
// (on a dedicated connection), and the *rueidis.Lua that runs it on a client.
type Script struct {
	*rueidis.Lua
	Source string
	SHA1   string

	retryable bool
}

func newScript(source string, retryable bool) *Script {
	sum := sha1.Sum([]byte(source))
	s := &Script{Source: source, SHA1: hex.EncodeToString(sum[:]), retryable: retryable}
	if retryable {
		s.Lua = rueidis.NewLuaScriptRetryable(source)
	} else {
		s.Lua = rueidis.NewLuaScript(source)
	}
	return s
}

// ExecMulti runs the script once per exec, all pipelined: EVALSHA first, then EVAL for the
// execs that got NOSCRIPT. Unlike rueidis.Lua.ExecMulti it sends no SCRIPT LOAD to every
// node before each batch.
func (s *Script) ExecMulti(ctx context.Context, c rueidis.Client, execs ...rueidis.LuaExec) []rueidis.RedisResult {
	build := func(e rueidis.LuaExec, sha bool) rueidis.Completed {
		var cmd rueidis.Completed
		if sha {
			cmd = c.B().Evalsha().Sha1(s.SHA1).Numkeys(int64(len(e.Keys))).Key(e.Keys...).Arg(e.Args...).Build()
		} else {
			cmd = c.B().Eval().Script(s.Source).Numkeys(int64(len(e.Keys))).Key(e.Keys...).Arg(e.Args...).Build()
		}
		if s.retryable {
			cmd = cmd.ToRetryable()
		}
		return cmd
	}
	cmds := make(rueidis.Commands, len(execs))
	for i, e := range execs {
		cmds[i] = build(e, true)
	}
	res := c.DoMulti(ctx, cmds...)
	var again []int
	for i, r := range res {
		if e, ok := rueidis.IsRedisErr(r.Error()); ok && e.IsNoScript() {
			again = append(again, i)
		}
	}
	if len(again) == 0 {
		return res
	}
	cmds = cmds[:0]
	for _, i := range again {
		cmds = append(cmds, build(execs[i], false))
	}
	for j, r := range c.DoMulti(ctx, cmds...) {
		res[again[j]] = r
	}
	return res
}
