package redistest

import (
	"fmt"
	"os"
	"sync/atomic"
	"testing"

	"github.com/goredisson/goredisson/internal/redisserver"
)

// switchLogger sends a container backend's log lines to a test's log while that test runs
// and to stderr after detach (a test's log must not be written once it has ended).
type switchLogger struct {
	tb atomic.Pointer[testing.TB]
}

var _ redisserver.Logger = (*switchLogger)(nil)

func newSwitchLogger(tb testing.TB) *switchLogger {
	l := &switchLogger{}
	if tb != nil {
		l.tb.Store(&tb)
	}
	return l
}

// Printf implements redisserver.Logger.
func (l *switchLogger) Printf(format string, v ...any) {
	if tb := l.tb.Load(); tb != nil {
		(*tb).Helper()
		(*tb).Logf(format, v...)
		return
	}
	fmt.Fprintf(os.Stderr, format+"\n", v...)
}

// detach sends later lines to stderr.
func (l *switchLogger) detach() { l.tb.Store(nil) }
