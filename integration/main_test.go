// Package integration holds the Go ↔ Java Redisson interop tests of the issue "interop":
// every test runs once per Redisson version of javapeer.KnownVersions, each run with its own
// Redis server (redistest.Start) and its own Java peer process (integration/javapeer).
package integration

import (
	"testing"

	"github.com/goredisson/goredisson/integration/rediscontainer"
	"github.com/goredisson/goredisson/internal/redistest"
)

func TestMain(m *testing.M) {
	rediscontainer.Use()
	redistest.Main(m)
}
