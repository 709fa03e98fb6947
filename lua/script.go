package lua

import (
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
}

func newScript(source string, retryable bool) *Script {
	sum := sha1.Sum([]byte(source))
	s := &Script{Source: source, SHA1: hex.EncodeToString(sum[:])}
	if retryable {
		s.Lua = rueidis.NewLuaScriptRetryable(source)
	} else {
		s.Lua = rueidis.NewLuaScript(source)
	}
	return s
}
