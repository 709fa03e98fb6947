// Package faults holds the fault-injection tests of docs/RELIABILITY.md (F1-F14, listed in
// docs/SCENARIOS.md): processes killed or paused, Redis paused, connections cut, replies lost,
// latency and blackholes, each checked with an overlap checker and a fenced resource.
package faults

import (
	"os"
	"testing"

	"github.com/goredisson/goredisson/integration/rediscontainer"
	"github.com/goredisson/goredisson/internal/redistest"
)

func TestMain(m *testing.M) {
	if spec := os.Getenv(holderEnv); spec != "" {
		os.Exit(runHolder(spec))
	}
	if spec := os.Getenv(permitsEnv); spec != "" {
		os.Exit(runPermitHolder(spec))
	}
	rediscontainer.Use()
	redistest.Main(m)
}
