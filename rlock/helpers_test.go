package rlock

import (
	"context"
	"sync"
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

// testTimeout bounds every fixture's context.
const testTimeout = time.Minute

// newClient returns a Client on srv, closed in t.Cleanup before its rueidis client.
func newClient(t testing.TB, srv *redistest.Server, opts Options) (*Client, rueidis.Client) {
	t.Helper()
	rc := srv.Client(t)
	c, err := New(context.Background(), rc, opts)
	require.NoError(t, err)
	t.Cleanup(c.Close)
	return c, rc
}

// fixture is what most tests of this package start from: a Client with the test's Options on
// a server, the rueidis client under it, a lock name no other test uses and its Lock, and
// contexts bounded by testTimeout, without and with an owner.
type fixture struct {
	srv  *redistest.Server
	c    *Client
	rc   rueidis.Client
	name string
	l    *Lock
	base context.Context // carries no owner
	ctx  context.Context // base with an owner of its own
}

// newFixture returns a fixture on the shared server.
func newFixture(t testing.TB, opts Options) *fixture {
	t.Helper()
	return newFixtureOn(t, redistest.Shared(t), opts)
}

// newFixtureOn returns a fixture on srv.
func newFixtureOn(t testing.TB, srv *redistest.Server, opts Options) *fixture {
	t.Helper()
	c, rc := newClient(t, srv, opts)
	name := redistest.Name(t)
	base := redistest.Context(t, testTimeout)
	return &fixture{srv: srv, c: c, rc: rc, name: name, l: c.NewLock(name), base: base, ctx: NewOwner(base)}
}

// owners returns two new owners, each on the fixture's base context.
func (f *fixture) owners() (a, b context.Context) { return NewOwner(f.base), NewOwner(f.base) }

// otherLock returns the fixture's lock as seen by another Client, with the default Options,
// on the same server.
func (f *fixture) otherLock(t testing.TB) *Lock {
	t.Helper()
	c, _ := newClient(t, f.srv, Options{})
	return c.NewLock(f.name)
}

// channel returns the unlock channel of the fixture's lock.
func (f *fixture) channel() string { return "redisson_lock__channel:{" + f.name + "}" }

// mustOwner returns the owner that ctx carries.
func mustOwner(t testing.TB, ctx context.Context) Owner {
	t.Helper()
	o, ok := OwnerFrom(ctx)
	require.True(t, ok, "ctx carries no owner")
	return o
}

// mustHeld returns l's Held context for the owner that ctx carries, and stops it in
// t.Cleanup; it fails the test when that owner does not hold l.
func mustHeld(t testing.TB, l *Lock, ctx context.Context) context.Context {
	t.Helper()
	held, stop, err := l.Held(ctx)
	require.NoError(t, err)
	t.Cleanup(stop)
	return held
}

// contend runs owners goroutines on each of clients new Clients of srv, each running rounds
// critical sections with the function run builds once per Client: it acquires the lock,
// calls inside while it holds it, and releases it. It returns the overlap checker that
// inside reports to.
func contend(t *testing.T, srv *redistest.Server, clients, owners, rounds int,
	run func(c *Client) func(ctx context.Context, inside func()) error) *redistest.Overlap {
	var ov redistest.Overlap
	var wg sync.WaitGroup
	for range clients {
		c, _ := newClient(t, srv, Options{})
		locked := run(c)
		for range owners {
			wg.Go(func() {
				for range rounds {
					assert.NoError(t, locked(redistest.Context(t, 30*time.Second), func() {
						_, leave := ov.Enter()
						leave()
					}))
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
	h := c.holds.get(name, field)
	return h != nil && h.watchdog && h.count > 0
}

// holdSafeUntil returns the registry's safe-until time of field's hold on name.
func holdSafeUntil(c *Client, name, field string) time.Time {
	t, _ := c.holds.safeUntilOf(name, field)
	return t
}
