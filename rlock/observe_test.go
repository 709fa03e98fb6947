package rlock

import (
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/goredisson/goredisson/internal/redistest"
)

func TestLoggerWarnings(t *testing.T) {
	var out redistest.SyncBuffer
	logger := slog.New(slog.NewTextHandler(&out, nil))
	f := newFixture(t, Options{Logger: logger, HoldWarning: 100 * time.Millisecond, WatchdogTimeout: 300 * time.Millisecond})
	require.NoError(t, f.l.Lock(f.ctx))
	require.Eventually(t, func() bool {
		return strings.Contains(out.String(), "held longer than the warning threshold")
	}, 5*time.Second, 10*time.Millisecond)
	_, err := f.otherLock(t).ForceUnlock(f.ctx)
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		return strings.Contains(out.String(), "rlock: lock lost")
	}, 5*time.Second, 10*time.Millisecond)
	assert.Contains(t, out.String(), "lock="+f.name)
}
