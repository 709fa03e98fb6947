package rlock

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/goredisson/goredisson/internal/redistest"
	"github.com/goredisson/goredisson/lua"
)

// replicated is a master with one replica, each a redis-server process of its own test.
type replicated struct {
	master, replica *redistest.Server
	m, r            rueidis.Client // bound to each node
}

// startReplicated starts a master and a replica of it, and returns once the replica's link
// is up and the master counts it.
func startReplicated(t testing.TB) *replicated {
	t.Helper()
	opts := redistest.ProcessOptions{Args: []string{"--repl-diskless-sync-delay", "0"}}
	p := &replicated{master: redistest.StartProcess(t, opts), replica: redistest.StartProcess(t, opts)}
	p.m, p.r = p.master.Client(t), p.replica.Client(t)
	host, port, _ := strings.Cut(p.master.Addr, ":")
	require.NoError(t, p.r.Do(context.Background(), p.r.B().Replicaof().Host(host).Port(mustAtoi(t, port)).Build()).Error())
	require.Eventually(t, func() bool {
		return strings.Contains(infoSection(t, p.r, "replication"), "master_link_status:up") &&
			strings.Contains(infoSection(t, p.m, "replication"), "connected_slaves:1")
	}, 20*time.Second, 10*time.Millisecond, "replica link up")
	ctx := context.Background()
	require.Eventually(t, func() bool {
		rs := p.m.DoMulti(ctx, p.m.B().Set().Key("replicated").Value("1").Build(), p.m.B().Wait().Numreplicas(1).Timeout(100).Build())
		n, err := rs[1].AsInt64()
		return err == nil && n == 1
	}, 20*time.Second, 10*time.Millisecond, "replica acknowledges writes")
	loadScripts(t, p.m)
	return p
}

// loadScripts caches the lock scripts on rc's server, so that no call is sent twice
// (EVALSHA, then EVAL, each followed by its WAIT or INFO).
func loadScripts(t testing.TB, rc rueidis.Client) {
	t.Helper()
	for _, s := range []lua.Script{lua.Acquire, lua.Release, lua.ForceRelease, lua.Renew,
		lua.ReadAcquire, lua.ReadRelease, lua.WriteAcquire, lua.WriteRelease, lua.RenewRead} {
		require.NoError(t, rc.Do(context.Background(), rc.B().ScriptLoad().Script(s.Source()).Build()).Error())
	}
}

// pauseReplica stops the replica from applying, and so from acknowledging, the master's
// writes (CLIENT PAUSE WRITE) until the returned function or the test's end resumes it.
func (p *replicated) pauseReplica(t *testing.T) (resume func()) {
	t.Helper()
	ctx := context.Background()
	require.NoError(t, p.r.Do(ctx, p.r.B().ClientPause().Timeout(60000).Write().Build()).Error())
	resume = func() { p.r.Do(ctx, p.r.B().ClientUnpause().Build()) }
	t.Cleanup(resume)
	return resume
}

func mustAtoi(t testing.TB, s string) int64 {
	t.Helper()
	n, err := strconv.ParseInt(s, 10, 64)
	require.NoError(t, err)
	return n
}

func infoSection(t testing.TB, rc rueidis.Client, section string) string {
	t.Helper()
	s, err := rc.Do(context.Background(), rc.B().Info().Section(section).Build()).ToString()
	require.NoError(t, err)
	return s
}

// calls returns how many times rc's server ran cmd.
func calls(t *testing.T, rc rueidis.Client, cmd string) int64 {
	t.Helper()
	n, err := redistest.CommandCalls(context.Background(), rc, cmd)
	require.NoError(t, err)
	return n
}

// counter reads how many times a server ran a command since the last read.
type counter struct {
	t    *testing.T
	rc   rueidis.Client
	cmd  string
	last int64
}

func newCounter(t *testing.T, rc rueidis.Client, cmd string) *counter {
	return &counter{t: t, rc: rc, cmd: cmd, last: calls(t, rc, cmd)}
}

func (c *counter) delta() int64 {
	n := calls(c.t, c.rc, c.cmd)
	d := n - c.last
	c.last = n
	return d
}

// Auto, the default, sends no WAIT through a single-server client, on any operation.
func TestReplicaSyncAutoOffOnSingleServer(t *testing.T) {
	f := newFixtureOn(t, redistest.Start(t), Options{WatchdogTimeout: 300 * time.Millisecond}) // commandstats of its own
	c, rc, l, ctx := f.c, f.rc, f.l, f.ctx
	require.Nil(t, c.replicas)
	require.NoError(t, l.Lock(ctx))
	require.Eventually(t, func() bool { return c.wheel.Stats().Renewed >= 2 }, 5*time.Second, 10*time.Millisecond)
	require.NoError(t, l.Unlock(ctx))
	require.NoError(t, l.Lock(ctx))
	_, err := l.ForceUnlock(ctx)
	require.NoError(t, err)
	assert.Zero(t, calls(t, rc, "info"), "no INFO (this read is not counted)")
	assert.Zero(t, calls(t, rc, "wait"), "no WAIT")
}

// With ReplicaSyncOn and a master without replicas, INFO is read once and no WAIT is sent:
// calls on that master take the shared connection until the count is read again.
func TestReplicaSyncOnWithoutReplicas(t *testing.T) {
	f := newFixtureOn(t, redistest.Start(t), Options{ReplicaSync: ReplicaSyncOn})
	rc, l, ctx := f.rc, f.l, f.ctx
	require.NotNil(t, f.c.replicas)
	loadScripts(t, rc)
	waits := newCounter(t, rc, "wait")
	infos := calls(t, rc, "info")
	for range 20 {
		require.NoError(t, l.Lock(ctx))
		require.NoError(t, l.Unlock(ctx))
	}
	assert.Equal(t, int64(1), calls(t, rc, "info")-infos-1, "one INFO replication for 40 calls (and the read before them)")
	assert.Zero(t, waits.delta(), "no WAIT")
}

// With a replica that keeps up, every write is confirmed: the replica has it when the call
// returns, and each call on the master sent one WAIT.
func TestReplicaSyncConfirmed(t *testing.T) {
	p := startReplicated(t)
	f := newFixtureOn(t, p.master, Options{ReplicaSync: ReplicaSyncOn})
	c, name, l, ctx := f.c, f.name, f.l, f.ctx
	waits := newCounter(t, p.m, "wait")

	require.NoError(t, l.Lock(ctx))
	assert.Equal(t, redistest.HGetAll(t, p.m, name), redistest.HGetAll(t, p.r, name), "on the replica when Lock returns")
	assert.Equal(t, int64(1), waits.delta(), "the first call learns the count, then waits")
	require.NoError(t, l.Lock(ctx))
	assert.Equal(t, map[string]string{c.field(mustOwner(t, ctx)): "2"}, redistest.HGetAll(t, p.r, name))
	assert.Equal(t, int64(1), waits.delta())
	require.NoError(t, l.Unlock(ctx))
	require.NoError(t, l.Unlock(ctx))
	assert.Empty(t, redistest.HGetAll(t, p.r, name), "released on the replica when Unlock returns")
	require.NoError(t, l.Lock(ctx))
	existed, err := l.ForceUnlock(ctx)
	require.NoError(t, err)
	assert.True(t, existed)
	assert.Empty(t, redistest.HGetAll(t, p.r, name), "deleted on the replica when ForceUnlock returns")
	assert.Equal(t, int64(4), waits.delta())
}

// A master whose replica does not acknowledge: an acquisition is given back after each of
// its three tries and the acquire fails with ErrNotReplicated, leaving nothing held; a
// re-entry given back leaves the first hold as it was, with the TTL the try set; Unlock is
// retried with its latch and succeeds (the master released), with a warning; a renewal
// no replica confirmed is a failed renewal, so the hold's safe-until passes.
func TestReplicaSyncUnconfirmed(t *testing.T) {
	p := startReplicated(t)
	var logs redistest.SyncBuffer
	f := newFixtureOn(t, p.master, Options{ReplicaSync: ReplicaSyncOn, ReplicaSyncTimeout: 100 * time.Millisecond,
		Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	c, name, l, ctx := f.c, f.name, f.l, f.ctx
	field := c.field(mustOwner(t, ctx))
	waits, scripts := newCounter(t, p.m, "wait"), newCounter(t, p.m, "evalsha")

	t.Run("acquire", func(t *testing.T) {
		resume := p.pauseReplica(t)
		defer resume()
		begin := time.Now()
		err := l.Lock(ctx)
		require.ErrorIs(t, err, ErrNotReplicated)
		assert.EqualError(t, err, `rlock: Lock "`+name+`": no replica confirmed the acquisition`)
		assert.GreaterOrEqual(t, time.Since(begin), 3*100*time.Millisecond+100*time.Millisecond+200*time.Millisecond,
			"three WAITs of 100 ms, with 100 and 200 ms between them")
		assert.Empty(t, redistest.HGetAll(t, p.m, name), "every try given back")
		assert.Equal(t, 0, c.holds.count(), "never recorded")
		assert.Equal(t, int64(3), waits.delta(), "one WAIT per try")
		assert.Equal(t, int64(3+3), scripts.delta(), "three acquisitions, three give-backs")

		// Again after SCRIPT FLUSH: the EVAL fallback pipelines a WAIT of its own.
		require.NoError(t, p.m.Do(ctx, p.m.B().ScriptFlush().Build()).Error())
		assert.ErrorIs(t, l.TryLock(ctx, 0, 0), ErrNotReplicated)
		assert.Empty(t, redistest.HGetAll(t, p.m, name))
		assert.Equal(t, 0, c.holds.count())
		loadScripts(t, p.m)
		waits.delta()
		scripts.delta()
	})

	t.Run("reentry", func(t *testing.T) {
		require.NoError(t, l.LockFor(ctx, 20*time.Second))
		held := mustHeld(t, l, ctx)
		resume := p.pauseReplica(t)
		defer resume()
		sent := time.Now()
		require.ErrorIs(t, l.LockFor(ctx, 5*time.Second), ErrNotReplicated)
		assert.Equal(t, map[string]string{field: "1"}, redistest.HGetAll(t, p.m, name), "the first hold stays")
		assert.InDelta(t, 5000, redistest.PTTL(t, p.m, name), 1000, "with the TTL the last try set")
		assert.WithinDuration(t, safeUntil(sent, 5*time.Second), holdSafeUntil(c, name, field), time.Second,
			"and the registry follows that TTL")
		assert.NoError(t, held.Err(), "the first hold is not ended")
		resume()
		require.NoError(t, l.Unlock(ctx))
		assert.ErrorIs(t, context.Cause(held), ErrReleased)
		waits.delta()
		scripts.delta()
	})

	t.Run("unlock", func(t *testing.T) {
		require.NoError(t, l.Lock(ctx))
		held := mustHeld(t, l, ctx)
		waits.delta()
		scripts.delta()
		p.pauseReplica(t)
		require.NoError(t, l.Unlock(ctx), "the master released it")
		assert.Empty(t, redistest.HGetAll(t, p.m, name))
		assert.ErrorIs(t, context.Cause(held), ErrReleased)
		assert.Equal(t, int64(3), waits.delta(), "three tries")
		assert.Equal(t, int64(3), scripts.delta(), "the release and two replays of its latch")
		assert.Equal(t, 1, strings.Count(logs.String(), "no replica confirmed an unlock"))
		assert.ErrorIs(t, l.Unlock(ctx), ErrNotHeld)
	})

	t.Run("force-unlock", func(t *testing.T) {
		resume := p.pauseReplica(t)
		resume()
		require.NoError(t, l.Lock(ctx))
		waits.delta()
		p.pauseReplica(t)
		existed, err := l.ForceUnlock(ctx)
		require.NoError(t, err, "the master deleted it")
		assert.True(t, existed)
		assert.Empty(t, redistest.HGetAll(t, p.m, name))
		assert.Equal(t, int64(1), waits.delta(), "waited once, not sent again")
		assert.Equal(t, 1, strings.Count(logs.String(), "no replica confirmed a force-unlock"))
	})
}

// Each watchdog renewal call waits for the replica. One that no replica confirms fails:
// safe-until stops moving and the Held context ends with ErrLeaseExpired, while the master
// still has the hold.
func TestReplicaSyncRenewal(t *testing.T) {
	p := startReplicated(t)
	var logs redistest.SyncBuffer
	f := newFixtureOn(t, p.master, Options{ReplicaSync: ReplicaSyncOn, ReplicaSyncTimeout: 50 * time.Millisecond,
		WatchdogTimeout: 600 * time.Millisecond, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	c, l, ctx := f.c, f.l, f.ctx
	require.NoError(t, l.Lock(ctx))
	held := mustHeld(t, l, ctx)
	waits := newCounter(t, p.m, "wait")
	require.Eventually(t, func() bool { return c.wheel.Stats().Calls >= 3 }, 5*time.Second, 10*time.Millisecond)
	assert.GreaterOrEqual(t, waits.delta(), int64(2), "renewal calls wait")
	assert.Zero(t, c.wheel.Stats().Failed)
	require.NoError(t, held.Err())

	p.pauseReplica(t)
	select {
	case <-held.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("the hold outlived its unconfirmed renewals")
	}
	assert.ErrorIs(t, context.Cause(held), ErrLeaseExpired)
	assert.Positive(t, c.wheel.Stats().Failed)
	assert.Contains(t, logs.String(), "no replica confirmed the write in time")
}

func TestConnectedReplicas(t *testing.T) {
	for in, want := range map[string]int64{
		"# Replication\r\nrole:master\r\nconnected_slaves:2\r\nslave0:ip=127.0.0.1\r\n": 2,
		"# Replication\r\nrole:master\r\nconnected_slaves:0\r\n":                        0,
		"# Replication\r\nrole:slave\r\n":                                               0,
	} {
		assert.Equal(t, want, connectedReplicas(in), "%q", in)
	}
}

// The other lock types go through the same replica sync: a fenced acquisition that a
// replica confirmed is on the replica with its token counter when Lock returns; one that no
// replica confirmed is given back (its tokens are spent, so later ones stay larger); a
// non-reentrant re-acquisition is refused without a give-back; a spin lock's
// acquisition is given back and retried like the RLock's.
func TestReplicaSyncOtherTypes(t *testing.T) {
	p := startReplicated(t)
	c, _ := newClient(t, p.master, Options{ReplicaSync: ReplicaSyncOn, ReplicaSyncTimeout: 100 * time.Millisecond})
	ctx := NewOwner(redistest.Context(t, 30*time.Second))
	name := redistest.Name(t)
	f := c.NewFencedLock(name)
	tok, err := f.Lock(ctx)
	require.NoError(t, err)
	assert.Equal(t, redistest.HGetAll(t, p.m, name), redistest.HGetAll(t, p.r, name), "on the replica when Lock returns")
	v, err := p.r.Do(ctx, p.r.B().Get().Key("redisson_lock_token:{"+name+"}").Build()).AsInt64()
	require.NoError(t, err)
	assert.Equal(t, tok, v, "and so is the token counter")
	require.NoError(t, f.Unlock(ctx))

	nr := c.NewNonReentrantLock(redistest.Name(t))
	require.NoError(t, nr.Lock(ctx))
	assert.ErrorIs(t, nr.Lock(ctx), ErrReentry)
	require.NoError(t, nr.Unlock(ctx))

	resume := p.pauseReplica(t)
	defer resume()
	_, err = f.Lock(ctx)
	require.ErrorIs(t, err, ErrNotReplicated)
	assert.Empty(t, redistest.HGetAll(t, p.m, name), "every try given back")
	spent, err := f.Token(ctx)
	require.NoError(t, err)
	assert.Equal(t, tok+3, spent, "three tries, three tokens spent")
	spin := c.NewSpinLock(redistest.Name(t), SpinBackoff{})
	require.ErrorIs(t, spin.Lock(ctx), ErrNotReplicated)
	assert.Equal(t, 0, c.holds.count(), "nothing recorded")
}

// TestReplicaSyncSemaphore: permits taken are on the replica when Acquire returns; with the
// replica paused, each try's permits are given back and Acquire fails with
// ErrNotReplicated, leaving the permits as they were.
func TestReplicaSyncSemaphore(t *testing.T) {
	p := startReplicated(t)
	c, _ := newClient(t, p.master, Options{ReplicaSync: ReplicaSyncOn, ReplicaSyncTimeout: 100 * time.Millisecond})
	ctx := redistest.Context(t, 30*time.Second)
	name := redistest.Name(t)
	s := c.NewSemaphore(name)
	_, err := s.TrySetPermits(ctx, 3)
	require.NoError(t, err)
	require.NoError(t, s.Acquire(ctx, 2))
	v, err := redistest.Do(t, p.r, p.r.B().Get().Key(name).Build()).ToString()
	require.NoError(t, err)
	assert.Equal(t, "1", v, "on the replica when Acquire returns")

	resume := p.pauseReplica(t)
	defer resume()
	assert.ErrorIs(t, s.Acquire(ctx, 1), ErrNotReplicated)
	n, err := s.AvailablePermits(ctx)
	require.NoError(t, err)
	assert.Equal(t, int64(1), n, "every try given back")
}

// TestReplicaSyncBatches: many owners acquiring at once on a master with a replica share
// WAITs: the acquisitions that arrive while a batch is on its way go together in the next,
// under one WAIT. Every owner acquires, each hold is on the replica when its Lock returns,
// and the releases that follow (made one by one, each retried on its own connection) open
// at most maxDedicated dedicated connections.
func TestReplicaSyncBatches(t *testing.T) {
	p := startReplicated(t)
	f := newFixtureOn(t, p.master, Options{ReplicaSync: ReplicaSyncOn})
	const owners = 4 * maxDedicated
	require.NoError(t, f.l.Lock(f.ctx)) // learns the replica count
	require.NoError(t, f.l.Unlock(f.ctx))
	before := connectedClients(t, p.m)
	waits := newCounter(t, p.m, "wait")
	locks, ctxs := make([]*Lock, owners), make([]context.Context, owners)
	var wg sync.WaitGroup
	errs := make(chan error, owners)
	for i := range owners {
		locks[i], ctxs[i] = f.c.NewLock(fmt.Sprintf("%s:%d", f.name, i)), NewOwner(f.base)
		wg.Go(func() {
			if err := locks[i].Lock(ctxs[i]); err != nil {
				errs <- err
			} else if len(redistest.HGetAll(t, p.r, locks[i].Name())) != 1 {
				errs <- fmt.Errorf("%s: the hold is not on the replica when Lock returns", locks[i].Name())
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	w := waits.delta()
	t.Logf("%d WAITs for %d acquisitions", w, owners)
	assert.Less(t, w, int64(owners/2), "WAITs for %d acquisitions", owners)
	for i := range owners {
		wg.Go(func() { assert.NoError(t, locks[i].Unlock(ctxs[i])) })
	}
	wg.Wait()
	opened := connectedClients(t, p.m) - before
	assert.LessOrEqual(t, opened, int64(maxDedicated+2), "connections opened for %d concurrent owners", owners)
}

// A synced acquisition made while another's batch blocks in WAIT (the replica does not
// acknowledge) goes in a batch of its own on another connection rather than waiting behind
// it: it is not confirmed either and is given back, and its Lock fails when its ctx ends,
// while the blocked one still tries. Nothing is left held, and the blocked one fails with
// ErrNotReplicated after its tries.
func TestReplicaSyncCallBesideBlockedBatch(t *testing.T) {
	p := startReplicated(t)
	f := newFixtureOn(t, p.master, Options{ReplicaSync: ReplicaSyncOn, ReplicaSyncTimeout: 500 * time.Millisecond})
	require.NoError(t, f.l.Lock(f.ctx)) // learns the replica count
	require.NoError(t, f.l.Unlock(f.ctx))
	p.pauseReplica(t)
	blocked := make(chan error, 1)
	go func() { blocked <- f.l.Lock(NewOwner(f.base)) }()
	require.Eventually(t, func() bool { return blockedClients(t, p.m) > 0 }, 5*time.Second, time.Millisecond, "a WAIT blocks")
	queued := f.c.NewLock(f.name + ":beside")
	ctx, cancel := context.WithTimeout(NewOwner(f.base), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	err := queued.Lock(ctx)
	t.Logf("the queued Lock returned after %v: %v", time.Since(start).Round(time.Millisecond), err)
	require.Error(t, err)
	select {
	case err := <-blocked:
		t.Fatalf("the blocked Lock ended (%v) before the other returned: the other waited behind it", err)
	default:
	}
	assert.Empty(t, redistest.HGetAll(t, p.m, queued.Name()), "nothing of the queued call is held")
	assert.ErrorIs(t, <-blocked, ErrNotReplicated)
	assert.Empty(t, redistest.HGetAll(t, p.m, f.name), "nothing of the blocked call is held")
}

// connectedClients returns INFO clients' connected_clients of rc's server.
func connectedClients(t *testing.T, rc rueidis.Client) int64 {
	return clientsField(t, rc, "connected_clients")
}

// blockedClients returns INFO clients' blocked_clients of rc's server.
func blockedClients(t *testing.T, rc rueidis.Client) int64 {
	return clientsField(t, rc, "blocked_clients")
}

// clientsField returns the field of INFO clients of rc's server.
func clientsField(t *testing.T, rc rueidis.Client, field string) int64 {
	t.Helper()
	for _, line := range strings.Split(infoSection(t, rc, "clients"), "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), field+":"); ok {
			return mustAtoi(t, v)
		}
	}
	t.Fatalf("no %s in INFO clients", field)
	return 0
}

// A synced call whose ctx has ended when it reaches its batch sends nothing: batches are
// sent under a context of their own.
func TestReplicaSyncEndedCtxSendsNothing(t *testing.T) {
	p := startReplicated(t)
	f := newFixtureOn(t, p.master, Options{ReplicaSync: ReplicaSyncOn})
	ctx, cancel := context.WithCancel(f.base)
	cancel()
	field := f.c.field(mustOwner(t, f.ctx))
	res, err, ok := f.c.replicas.batched(ctx, f.name, lua.Call{Script: lua.Acquire, Keys: []string{f.name}, Args: []string{"30000", field}})
	require.True(t, ok, "outside a cluster the master is known")
	assert.ErrorIs(t, err, errNoTurn)
	assert.ErrorIs(t, res[0].Error(), errNoTurn)
	assert.Empty(t, redistest.HGetAll(t, p.m, f.name), "nothing ran")
}

// A synced acquire on a master that hangs ends, while the caller's ctx is alive, with an
// error that says so, not with a context error: the batch met its own bound
// (errBatchNoReply).
func TestReplicaSyncHungMasterIsNoContextError(t *testing.T) {
	p := startReplicated(t)
	f := newFixtureOn(t, p.master, Options{ReplicaSync: ReplicaSyncOn, ReplicaSyncTimeout: 100 * time.Millisecond})
	require.NoError(t, f.l.Lock(f.ctx)) // learns the replica count
	require.NoError(t, f.l.Unlock(f.ctx))
	p.master.Pause(t)
	t.Cleanup(func() { p.master.Resume(t) }) // before the Client closes
	ctx, cancel := context.WithTimeout(NewOwner(f.base), 20*time.Second)
	defer cancel()
	start := time.Now()
	err := f.l.Lock(ctx)
	t.Logf("Lock on the stopped master returned after %v: %v", time.Since(start).Round(time.Millisecond), err)
	require.Error(t, err)
	assert.NoError(t, ctx.Err(), "the caller's ctx is alive")
	assert.NotErrorIs(t, err, context.DeadlineExceeded)
	assert.ErrorIs(t, err, errBatchNoReply)
}
