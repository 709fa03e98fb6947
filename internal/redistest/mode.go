package redistest

import (
	"fmt"
	"os"
	"sync"
	"testing"

	"github.com/goredisson/goredisson/internal/redisserver"
)

// Modes a [Server] can run in, as returned by [Server.Mode].
const (
	// ModeContainer runs Redis in a container, in a test binary that installed a way to
	// run them (see the package doc).
	ModeContainer = redisserver.ModeContainer
	// ModeProcess runs redis-server as a child process of the test binary.
	ModeProcess = redisserver.ModeProcess
)

// EnvMode is the environment variable that selects the mode: "container", "process"
// or "auto" (the default when it is unset or empty).
const EnvMode = redisserver.EnvMode

var announced sync.Map // message -> struct{}{}

// announce logs, once per distinct message and test binary, which path runs Redis: to t's log
// (when t is not nil) and to stderr, so it is seen even without -v.
func announce(t testing.TB, mode, detail string) {
	msg := fmt.Sprintf("redistest: Redis runs in %s mode (%s)", mode, detail)
	if _, loaded := announced.LoadOrStore(msg, struct{}{}); loaded {
		return
	}
	if t != nil {
		t.Log(msg)
	}
	fmt.Fprintln(os.Stderr, msg)
}
