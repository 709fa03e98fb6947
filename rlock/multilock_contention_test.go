package rlock

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/goredisson/goredisson/internal/redistest"
)

// TestMultiLockContention: owners of three applications (each with its own Client per
// server) contend for one MultiLock over five servers; no two are ever inside at once, each
// finds every lock held with a count of one when inside, and every Unlock succeeds.
func TestMultiLockContention(t *testing.T) { // ML-04 over five servers
	srvs := startServers(t, 5)
	const name = "multilock:contention"
	var ov redistest.Overlap
	var wg sync.WaitGroup
	for range 3 {
		m, err := NewMultiLock(groupOn(t, srvs, name, Options{})...)
		require.NoError(t, err)
		for range 3 {
			wg.Go(func() {
				ctx := NewOwner(redistest.Context(t, testTimeout))
				for range 15 {
					if !assert.NoError(t, m.TryLock(ctx, 30*time.Second, 0)) {
						return
					}
					_, leave := ov.Enter()
					for i, l := range m.Locks() {
						n, err := l.HoldCount(ctx)
						assert.NoError(t, err)
						assert.Equal(t, 1, n, "lock %d", i)
					}
					leave()
					assert.NoError(t, m.Unlock(ctx))
				}
			})
		}
	}
	wg.Wait()
	assert.Zero(t, ov.Violations())
	assert.Equal(t, int64(3*3*15), ov.Entries())
}
