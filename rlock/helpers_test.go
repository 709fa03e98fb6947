package rlock

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/goredisson/goredisson/internal/redistest"
)

func TestMain(m *testing.M) {
	redistest.ExportURL("REDIS_URL") // for the Examples
	redistest.Main(m)
}

var nameSeq atomic.Int64

// lockName returns a lock name no other test uses.
func lockName(t testing.TB) string {
	return fmt.Sprintf("%s:%d", strings.ReplaceAll(t.Name(), "/", ":"), nameSeq.Add(1))
}

// newClient returns a Client on srv, closed in t.Cleanup before its rueidis client.
func newClient(t testing.TB, srv *redistest.Server, opts Options) (*Client, rueidis.Client) {
	t.Helper()
	rc := srv.Client(t)
	c, err := New(context.Background(), rc, opts)
	require.NoError(t, err)
	t.Cleanup(c.Close)
	return c, rc
}

func newLock(t testing.TB, c *Client, name string) *Lock {
	t.Helper()
	l := c.NewLock(name)
	return l
}

// testCtx returns a context that ends with the test, bounded by d.
func testCtx(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// hgetall returns the lock hash.
func hgetall(t testing.TB, rc rueidis.Client, name string) map[string]string {
	t.Helper()
	m, err := rc.Do(context.Background(), rc.B().Hgetall().Key(name).Build()).AsStrMap()
	require.NoError(t, err)
	return m
}

func pttl(t testing.TB, rc rueidis.Client, name string) int64 {
	t.Helper()
	n, err := rc.Do(context.Background(), rc.B().Pttl().Key(name).Build()).AsInt64()
	require.NoError(t, err)
	return n
}

// overlap detects two owners inside one critical section at once.
type overlap struct {
	inside     atomic.Int32
	violations atomic.Int32
	entries    atomic.Int64
}

// enter marks an owner inside; the returned func marks it out.
func (o *overlap) enter() func() {
	if o.inside.Add(1) != 1 {
		o.violations.Add(1)
	}
	o.entries.Add(1)
	return func() { o.inside.Add(-1) }
}

// contend runs owners goroutines on each of clients new Clients of srv, each running rounds
// critical sections with the function run builds once per Client: it acquires the lock,
// calls inside while it holds it, and releases it. It returns the overlap checker that
// inside reports to.
func contend(t *testing.T, srv *redistest.Server, clients, owners, rounds int,
	run func(c *Client) func(ctx context.Context, inside func()) error) *overlap {
	var ov overlap
	var wg sync.WaitGroup
	for range clients {
		c, _ := newClient(t, srv, Options{})
		locked := run(c)
		for range owners {
			wg.Go(func() {
				for range rounds {
					assert.NoError(t, locked(testCtx(t, 30*time.Second), func() { defer ov.enter()() }))
				}
			})
		}
	}
	wg.Wait()
	return &ov
}

// rawHolder writes, with raw commands, a lock held once by field with a TTL of ttlMs.
func rawHolder(t testing.TB, rc rueidis.Client, name, field string, ttlMs int64) {
	t.Helper()
	ctx := context.Background()
	require.NoError(t, rc.Do(ctx, rc.B().Hset().Key(name).FieldValue().FieldValue(field, "1").Build()).Error())
	require.NoError(t, rc.Do(ctx, rc.B().Pexpire().Key(name).Milliseconds(ttlMs).Build()).Error())
}

// renewing reports whether the registry holds field's hold on name under the watchdog.
func renewing(c *Client, name, field string) bool {
	c.holds.mu.Lock()
	defer c.holds.mu.Unlock()
	h := c.holds.byName[name][field]
	return h != nil && h.watchdog && h.count > 0
}
