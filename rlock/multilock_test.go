package rlock

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/goredisson/goredisson/internal/redistest"
)

func TestGroupArithmetic(t *testing.T) {
	t.Run("quorum", func(t *testing.T) {
		for n, want := range map[int]int{1: 1, 2: 2, 3: 2, 4: 3, 5: 3, 6: 4, 7: 4} {
			assert.Equal(t, want, quorum(n), "n=%d", n)
		}
	})
	t.Run("member lease", func(t *testing.T) { // Redisson's newLeaseTime
		assert.Zero(t, memberLease(time.Second, 0), "no lease: the watchdog")
		assert.Equal(t, 2*time.Second, memberLease(time.Second, 10*time.Second), "wait and lease: twice the wait")
		assert.Equal(t, 10*time.Second, memberLease(0, 10*time.Second), "no wait: the lease")
	})
	t.Run("member wait budget", func(t *testing.T) { // Redisson's calcLockWaitTime
		multi, red := &group{members: make([]*Lock, 5)}, &group{members: make([]*Lock, 5), redlock: true}
		assert.Equal(t, time.Second, multi.memberWait(time.Second), "MultiLock: the whole wait")
		assert.Equal(t, 200*time.Millisecond, red.memberWait(time.Second), "RedLock: wait/n")
		assert.Equal(t, time.Millisecond, red.memberWait(3*time.Millisecond), "RedLock: at least 1 ms")
		assert.Zero(t, red.memberWait(0), "no wait: one attempt")
	})
	t.Run("round wait of Lock", func(t *testing.T) { // Redisson's lockInterruptibly
		assert.Equal(t, 7500*time.Millisecond, lockWait(5, 0))
		for range 100 {
			w := lockWait(5, 4*time.Second) // lease below the base: [lease/2, lease)
			assert.True(t, w >= 2*time.Second && w < 4*time.Second, "%v", w)
			w = lockWait(2, 10*time.Second) // above: [base, lease)
			assert.True(t, w >= 3*time.Second && w < 10*time.Second, "%v", w)
		}
	})
	t.Run("validity", func(t *testing.T) {
		now := time.Now()
		lease := 10 * time.Second
		drift := lease/100 + driftMargin // 110 ms
		// Three members acquired by requests sent 300, 200 and 100 ms ago.
		safe := []time.Time{safeUntil(now.Add(-300*time.Millisecond), lease),
			safeUntil(now.Add(-200*time.Millisecond), lease), safeUntil(now.Add(-100*time.Millisecond), lease)}
		assert.Equal(t, lease-300*time.Millisecond-drift, validity(safe, 3, now),
			"all needed (MultiLock): the earliest member decides: lease - elapsed - drift")
		assert.Equal(t, lease-200*time.Millisecond-drift, validity(safe, 2, now),
			"majority of the held: the quorum-th latest decides")
		assert.Equal(t, lease-100*time.Millisecond-drift, validity(safe, 1, now))
		assert.Zero(t, validity(safe[:1], 2, now), "fewer held than needed")
		assert.Zero(t, validity(safe, 3, now.Add(time.Minute)), "ran out: zero, never negative")
		assert.Equal(t, lease-300*time.Millisecond-drift, validity(safe, 3, now), "the input is not reordered")
	})
}

// groupOn returns, for each server, a Client on it, and the lock called name of each.
func groupOn(t *testing.T, srvs []*redistest.Server, name string, opts Options) []*Lock {
	t.Helper()
	locks := make([]*Lock, len(srvs))
	for i, srv := range srvs {
		c, _ := newClient(t, srv, opts)
		locks[i] = c.NewLock(name)
	}
	return locks
}

func TestGroupBadInput(t *testing.T) {
	f := newFixture(t, Options{})
	a, b := f.c.NewLock(f.name+":a"), f.c.NewLock(f.name+":b")
	_, err := NewMultiLock()
	assert.ErrorIs(t, err, ErrNoMembers)
	_, err = NewRedLock()
	assert.ErrorIs(t, err, ErrNoMembers)
	_, err = NewMultiLock(a, nil)
	assert.ErrorIs(t, err, ErrNoMembers)
	_, err = NewMultiLock(a, b, f.c.NewLock(f.name+":a"))
	assert.ErrorIs(t, err, ErrDuplicateMember, "the same name on one client, through two handles")
	_, err = NewRedLock(f.l, f.otherLock(t))
	assert.ErrorIs(t, err, ErrDuplicateMember, "the same key through two Clients on one server")
	_, err = NewMultiLock(a, f.c.NewSpinLock(f.name+":s", SpinBackoff{}))
	assert.ErrorIs(t, err, ErrMixedMembers, "lock types")
	other, _ := newClient(t, f.srv, Options{WatchdogTimeout: 5 * time.Second})
	_, err = NewMultiLock(a, other.NewLock(f.name+":c"))
	assert.ErrorIs(t, err, ErrMixedMembers, "watchdog leases")
	assert.ErrorContains(t, err, `rlock: NewMultiLock "[`, "the error names the call and the group")
	_, err = NewMultiLock(a, f.c.NewLock(""))
	assert.ErrorIs(t, err, ErrEmptyName)
	closed, _ := newClient(t, f.srv, Options{})
	cl := closed.NewLock(f.name + ":d")
	m, err := NewMultiLock(a, cl)
	require.NoError(t, err)
	closed.Close()
	_, err = NewRedLock(a, cl)
	assert.ErrorIs(t, err, ErrClosed, "a closed Client at construction")
	assert.ErrorIs(t, m.TryLock(f.ctx, 0, 0), ErrClosed, "a Client closed after construction")
	held, err := a.IsHeld(f.ctx)
	require.NoError(t, err)
	assert.False(t, held, "nothing half-held")

	m, err = NewMultiLock(a, b)
	require.NoError(t, err)
	assert.ErrorIs(t, m.Lock(f.base), ErrNoOwner)
	assert.ErrorIs(t, m.TryLock(f.ctx, -1, 0), ErrInvalidWait)
	assert.ErrorIs(t, m.TryLock(f.ctx, 0, -1), ErrInvalidLease)
	assert.ErrorIs(t, m.LockFor(f.ctx, 0), ErrInvalidLease)
	assert.ErrorIs(t, m.Unlock(f.ctx), ErrNotHeld)
	_, _, err = m.Held(f.ctx)
	assert.ErrorIs(t, err, ErrNotHeld)
	_, err = m.Validity(f.ctx)
	assert.ErrorIs(t, err, ErrNotHeld)
}

// TestMultiLockOneServer: a MultiLock over names on one server is all or nothing, re-enters,
// gives back what it took when a lock is held by another owner, waits for that lock through
// pub/sub, and its Held context ends with the first lock lost.
func TestMultiLockOneServer(t *testing.T) { // ML-01, ML-03
	f := newFixture(t, Options{})
	names := []string{f.name + ":a", f.name + ":b", f.name + ":c"}
	locks := []*Lock{f.c.NewLock(names[0]), f.c.NewLock(names[1]), f.c.NewLock(names[2])}
	m, err := NewMultiLock(locks...)
	require.NoError(t, err)
	a, b := f.owners()

	require.NoError(t, m.TryLock(a, 0, 0))
	for _, l := range locks {
		n, err := l.HoldCount(a)
		require.NoError(t, err)
		assert.Equal(t, 1, n, l.Name())
		assert.True(t, renewing(f.c, l.Name(), f.c.field(mustOwner(t, a))), "each lock on its Client's watchdog")
	}
	v, err := m.Validity(a)
	require.NoError(t, err)
	assert.Greater(t, v, DefaultWatchdogTimeout/2)
	require.NoError(t, m.Lock(a), "re-entry")
	n, err := locks[1].HoldCount(a)
	require.NoError(t, err)
	assert.Equal(t, 2, n)
	assert.ErrorIs(t, m.TryLock(b, 0, 0), ErrLocked)
	require.NoError(t, m.Unlock(a))
	require.NoError(t, m.Unlock(a))
	for _, name := range names {
		assert.False(t, redistest.Exists(t, f.rc, name))
	}

	// Give-back: the middle lock is held by another owner.
	require.NoError(t, locks[1].Lock(b))
	assert.ErrorIs(t, m.TryLock(a, 0, 0), ErrLocked)
	assert.False(t, redistest.Exists(t, f.rc, names[0]), "the first lock was given back")
	assert.False(t, redistest.Exists(t, f.rc, names[2]), "the last lock was given back")
	assert.Zero(t, f.c.holds.count()-1, "only b's hold is left")

	// Waiting: a's TryLock holds the first lock and waits for the second through pub/sub.
	done := make(chan error, 1)
	go func() { done <- m.TryLock(a, time.Minute, 0) }()
	require.True(t, redistest.Poll(10*time.Second, time.Millisecond, func() bool {
		return redistest.NumSub(t, f.rc, "redisson_lock__channel:{"+names[1]+"}") > 0
	}), "a waits on the second lock's channel")
	assert.True(t, redistest.Exists(t, f.rc, names[0]), "holding the first lock while waiting, in order")
	assert.False(t, redistest.Exists(t, f.rc, names[2]), "not the last one")
	require.NoError(t, locks[1].Unlock(b))
	require.NoError(t, <-done)

	// Held ends with the first lock lost, naming it.
	held := mustGroupHeld(t, m, a)
	_, err = locks[2].ForceUnlock(f.ctx)
	require.NoError(t, err)
	<-held.Done()
	cause := context.Cause(held)
	assert.ErrorIs(t, cause, ErrForceUnlocked)
	assert.ErrorContains(t, cause, names[2])
	assert.ErrorIs(t, m.Unlock(a), ErrNotHeld, "the lost lock")
	for _, name := range names {
		assert.False(t, redistest.Exists(t, f.rc, name), "every other lock released all the same")
	}
}

func mustGroupHeld(t *testing.T, m interface {
	Held(context.Context) (context.Context, context.CancelFunc, error)
}, ctx context.Context) context.Context {
	t.Helper()
	held, stop, err := m.Held(ctx)
	require.NoError(t, err)
	t.Cleanup(stop)
	return held
}

// TestMultiLockLease: an explicit lease is set on every lock once all are held (Redisson
// acquires them with twice the wait first), and the registry follows it.
func TestMultiLockLease(t *testing.T) {
	f := newFixture(t, Options{})
	names := []string{f.name + ":a", f.name + ":b"}
	m, err := NewMultiLock(f.c.NewLock(names[0]), f.c.NewLock(names[1]))
	require.NoError(t, err)
	require.NoError(t, m.TryLock(f.ctx, 30*time.Second, 5*time.Second))
	for _, name := range names {
		ttl := redistest.PTTL(t, f.rc, name)
		assert.True(t, ttl > 4000 && ttl <= 5000, "PTTL %d: the lease, not twice the wait", ttl)
		assert.False(t, renewing(f.c, name, f.c.field(mustOwner(t, f.ctx))), "an explicit lease is not renewed")
	}
	v, err := m.Validity(f.ctx)
	require.NoError(t, err)
	assert.True(t, v > 4*time.Second && v < 5*time.Second, "validity %v", v)
	require.NoError(t, m.Unlock(f.ctx))

	require.NoError(t, m.LockFor(f.ctx, 3*time.Second))
	ttl := redistest.PTTL(t, f.rc, names[1])
	assert.True(t, ttl > 2000 && ttl <= 3000, "PTTL %d", ttl)
	require.NoError(t, m.Unlock(f.ctx))
}

// startServers starts n independent redis-server processes.
func startServers(t *testing.T, n int) []*redistest.Server {
	t.Helper()
	srvs := make([]*redistest.Server, n)
	for i := range srvs {
		srvs[i] = redistest.StartProcess(t, redistest.ProcessOptions{})
	}
	return srvs
}

// TestRedLockBasics: a majority is enough, the validity is reported, a second owner is
// excluded and woken by the release, and Held ends once the majority is lost.
func TestRedLockBasics(t *testing.T) { // RD-06, RD-07 shapes
	srvs := startServers(t, 5)
	ctx := redistest.Context(t, testTimeout)
	const name = "redlock:basics"
	locks := groupOn(t, srvs, name, Options{})
	r, err := NewRedLock(locks...)
	require.NoError(t, err)
	assert.Equal(t, 3, r.Quorum())
	a, b := NewOwner(ctx), NewOwner(ctx)

	// Another owner holds two of the five: a majority is still free.
	require.NoError(t, locks[0].Lock(b))
	require.NoError(t, locks[3].Lock(b))
	v, err := r.TryLock(a, 0, 10*time.Second)
	require.NoError(t, err)
	assert.True(t, v > 9*time.Second && v < 10*time.Second, "validity %v", v)
	for _, i := range []int{1, 2, 4} {
		held, err := locks[i].IsHeld(a)
		require.NoError(t, err)
		assert.True(t, held, "lock %d", i)
	}
	held, err := r.IsHeld(a)
	require.NoError(t, err)
	assert.True(t, held)
	require.NoError(t, r.Unlock(a), "on every server; b's two are skipped")
	for _, i := range []int{1, 2, 4} {
		assert.False(t, redistest.Exists(t, locks[i].c.rc, name), "lock %d", i)
	}
	require.NoError(t, locks[0].Unlock(b))
	require.NoError(t, locks[3].Unlock(b))

	// Excluded while held, woken by the release. a takes all five through a MultiLock over
	// the same locks (a RedLock may keep only a majority when a server is slow to answer),
	// so that b waits on the first server.
	all, err := NewMultiLock(locks...)
	require.NoError(t, err)
	require.NoError(t, all.Lock(a))
	_, err = r.TryLock(b, 0, 0)
	assert.ErrorIs(t, err, ErrLocked)
	done := make(chan error, 1)
	go func() {
		_, err := r.TryLock(b, time.Minute, 0)
		done <- err
	}()
	require.True(t, redistest.Poll(10*time.Second, time.Millisecond, func() bool {
		return redistest.NumSub(t, locks[0].c.rc, "redisson_lock__channel:{"+name+"}") > 0
	}), "b waits on the first server's channel")
	heldA := mustGroupHeld(t, r, a)
	require.NoError(t, r.Unlock(a))
	<-heldA.Done()
	assert.ErrorIs(t, context.Cause(heldA), ErrReleased)
	require.NoError(t, <-done)

	// Held ends when the majority is lost, not before. b holds at least a majority (the
	// locks still being acquired when it had one may have been given up).
	heldB := mustGroupHeld(t, r, b)
	var holding []int
	for i, l := range locks {
		if h, err := l.IsHeld(b); err == nil && h {
			holding = append(holding, i)
		}
	}
	require.GreaterOrEqual(t, len(holding), 3)
	for _, i := range holding[:len(holding)-3] {
		_, err := locks[i].ForceUnlock(ctx)
		require.NoError(t, err)
	}
	assert.NoError(t, context.Cause(heldB), "three of five still held")
	_, err = locks[holding[len(holding)-1]].ForceUnlock(ctx)
	require.NoError(t, err)
	<-heldB.Done()
	assert.ErrorIs(t, context.Cause(heldB), ErrForceUnlocked)
	_, err = r.Validity(b)
	assert.ErrorIs(t, err, ErrNotHeld)
	require.NoError(t, r.Unlock(b), "the two left are released")
}

// TestRedLockServersDown: RL-style fault run over five independent servers: owners of three
// applications (each with its own Client per server) contend for one RedLock; two servers
// are killed mid-run and exclusion holds and acquisitions go on; with three down an acquire
// fails with ErrNoQuorum naming the servers, and leaves nothing held on the two alive.
func TestRedLockServersDown(t *testing.T) { // RD-01 and RD-08 shapes over five servers
	srvs := startServers(t, 5)
	const name = "redlock:down"
	var apps [][]*Lock
	for range 3 {
		apps = append(apps, groupOn(t, srvs, name, Options{WatchdogTimeout: 2 * time.Second}))
	}
	var ov redistest.Overlap
	stop := make(chan struct{})
	killed := make(chan struct{})
	var afterKill, failed atomic.Int64
	errs := make(chan error, 64)
	var wg sync.WaitGroup
	for _, locks := range apps {
		r, err := NewRedLock(locks...)
		require.NoError(t, err)
		for range 3 {
			wg.Go(func() {
				ctx := NewOwner(redistest.Context(t, 2*testTimeout))
				for {
					select {
					case <-stop:
						return
					default:
					}
					if _, err := r.TryLock(ctx, 10*time.Second, 0); err != nil {
						failed.Add(1)
						select {
						case errs <- err:
						default:
						}
						continue
					}
					_, leave := ov.Enter()
					select {
					case <-killed:
						afterKill.Add(1)
					default:
					}
					leave()
					assert.NoError(t, r.Unlock(ctx))
				}
			})
		}
	}
	require.True(t, redistest.Poll(time.Minute, 10*time.Millisecond, func() bool { return ov.Entries() >= 30 }), "contention runs")
	srvs[1].Kill(t)
	srvs[3].Kill(t)
	close(killed)
	ok := redistest.Poll(time.Minute, 10*time.Millisecond, func() bool { return afterKill.Load() >= 30 })
	close(stop)
	wg.Wait()
	require.True(t, ok, "acquisitions go on with two of five servers down (failed attempts: %d)", failed.Load())
	assert.Zero(t, ov.Violations(), "two owners inside at once")

	// Three down: no majority.
	srvs[0].Kill(t)
	r, err := NewRedLock(apps[0]...)
	require.NoError(t, err)
	ctx := NewOwner(redistest.Context(t, testTimeout))
	_, err = r.TryLock(ctx, time.Second, 0)
	require.ErrorIs(t, err, ErrNoQuorum)
	assert.ErrorContains(t, err, srvs[0].Addr, "the error names the servers that failed")
	for _, i := range []int{2, 4} {
		assert.False(t, redistest.Exists(t, apps[0][i].c.rc, name), "nothing half-held on server %d", i)
	}
	for _, i := range []int{0, 1, 3} {
		srvs[i].Restart(t)
	}
	for i := range srvs {
		assert.False(t, redistest.Exists(t, apps[0][i].c.rc, name), "nothing held on server %d after the restart", i)
	}
	v, err := r.TryLock(ctx, 10*time.Second, 0)
	require.NoError(t, err, "back to five")
	assert.Positive(t, v)
	require.NoError(t, r.Unlock(ctx))
	// Unlock reports success once a lock was released; a release that met a connection the
	// restart broke is logged, and that hold, no longer renewed, ends with its 2 s lease.
	for i := range srvs {
		assert.True(t, redistest.Poll(10*time.Second, 10*time.Millisecond, func() bool {
			return !redistest.Exists(t, apps[0][i].c.rc, name)
		}), "released on server %d, or expired with its lease", i)
	}
}

// TestRedLockPausedServer: one server of five stopped (SIGSTOP) while an owner holds the
// RedLock with an explicit lease. Within the lease, another owner is still excluded (and
// gets its answer without waiting for the stopped server); past the lease, the holder's
// Held ends with ErrLeaseExpired and another owner acquires a majority on the other four.
func TestRedLockPausedServer(t *testing.T) {
	srvs := startServers(t, 5)
	ctx := redistest.Context(t, testTimeout)
	const name = "redlock:paused"
	// A short watchdog: a give-back that leaves a re-entered hold sets this lease.
	r, err := NewRedLock(groupOn(t, srvs, name, Options{ReleaseTimeout: time.Second, WatchdogTimeout: 3 * time.Second})...)
	require.NoError(t, err)
	// a takes all five through a MultiLock over the same locks: a RedLock's single attempt
	// may keep only a majority when a server is slow to answer.
	all, err := NewMultiLock(r.Locks()...)
	require.NoError(t, err)
	a, b := NewOwner(ctx), NewOwner(ctx)

	// Within the lease: b is refused, then waits (on the first server's channel, not on the
	// stopped one) and acquires a majority when a releases, the server still stopped.
	require.NoError(t, all.TryLock(a, 10*time.Second, 20*time.Second))
	heldA := mustGroupHeld(t, r, a)
	srvs[2].Pause(t)
	_, err = r.TryLock(b, 300*time.Millisecond, 0)
	assert.ErrorIs(t, err, ErrLocked, "four servers say a holds it")
	done := make(chan error, 1)
	go func() {
		_, err := r.TryLock(b, time.Minute, 0)
		done <- err
	}()
	require.True(t, redistest.Poll(30*time.Second, time.Millisecond, func() bool {
		select {
		case err := <-done:
			t.Fatalf("b's wait ended before a released: %v", err)
		default:
		}
		return redistest.NumSub(t, r.Locks()[0].c.rc, "redisson_lock__channel:{"+name+"}") > 0
	}), "b waits on the first server's channel")
	assert.NoError(t, heldA.Err())
	require.NoError(t, r.Unlock(a), "released on the four running servers")
	require.NoError(t, <-done, "b acquires without the stopped server")
	srvs[2].Resume(t)
	require.NoError(t, r.Unlock(b))

	// Beyond the lease.
	require.NoError(t, all.TryLock(a, 10*time.Second, 2*time.Second))
	heldA = mustGroupHeld(t, r, a)
	srvs[2].Pause(t)
	<-heldA.Done()
	assert.ErrorIs(t, context.Cause(heldA), ErrLeaseExpired)
	v, err := r.TryLock(b, 20*time.Second, 0)
	require.NoError(t, err, "a majority on the four running servers")
	assert.Positive(t, v)
	srvs[2].Resume(t)
	require.NoError(t, r.Unlock(b))
	// A request of a's that the stopped server had not run yet runs on resume; a hold it
	// takes is given back by its goroutine, or ends with its 2 s lease.
	require.True(t, redistest.Poll(10*time.Second, 10*time.Millisecond, func() bool {
		for _, l := range r.Locks() {
			if n, err := l.HoldCount(a); err != nil || n != 0 {
				return false
			}
		}
		return true
	}), "a holds nothing on any server: %s", groupState(t, r, a))
	assert.ErrorIs(t, r.Unlock(a), ErrNotHeld, "a's lease ran out everywhere")
}

// groupState describes, for a failure message, what each member's server holds and what the
// owner's hold count is there.
func groupState(t *testing.T, r *RedLock, owner context.Context) string {
	t.Helper()
	var b strings.Builder
	ctx := redistest.Context(t, 5*time.Second)
	for i, l := range r.Locks() {
		n, err := l.HoldCount(owner)
		h, herr := l.c.rc.Do(ctx, l.c.rc.B().Hgetall().Key(l.name).Build()).AsStrMap()
		ttl, terr := l.c.rc.Do(ctx, l.c.rc.B().Pttl().Key(l.name).Build()).AsInt64()
		fmt.Fprintf(&b, "\n member %d: hold count %d (%v), hash %v (%v), pttl %d (%v)", i, n, err, h, herr, ttl, terr)
	}
	return b.String()
}

// TestGroupScenarios: Redisson's own MultiLock and RedLock checks (ML-02, RD-05, RD-06), on
// three names of one server.
func TestGroupScenarios(t *testing.T) {
	f := newFixture(t, Options{})
	names := []string{f.name + ":a", f.name + ":b", f.name + ":c"}
	locks := []*Lock{f.c.NewLock(names[0]), f.c.NewLock(names[1]), f.c.NewLock(names[2])}

	t.Run("ML-02 one attempt each, one winner", func(t *testing.T) {
		m, err := NewMultiLock(locks...)
		require.NoError(t, err)
		var won atomic.Int32
		var wg sync.WaitGroup
		owners := make([]context.Context, 10)
		for i := range owners {
			owners[i] = NewOwner(f.base)
			wg.Go(func() {
				switch err := m.TryLock(owners[i], 0, 10*time.Second); {
				case err == nil:
					won.Add(1)
				default:
					assert.ErrorIs(t, err, ErrLocked)
				}
			})
		}
		wg.Wait()
		assert.Equal(t, int32(1), won.Load(), "exactly one of ten single attempts wins")
		for _, o := range owners {
			if held, _, err := m.Held(o); err == nil {
				_ = held
				require.NoError(t, m.Unlock(o))
			}
		}
		for _, name := range names {
			assert.False(t, redistest.Exists(t, f.rc, name), "losers left nothing behind")
		}
	})

	t.Run("RD-05 two of three held elsewhere", func(t *testing.T) {
		r, err := NewRedLock(locks...)
		require.NoError(t, err)
		a, b := f.owners()
		require.NoError(t, locks[0].Lock(b))
		require.NoError(t, locks[2].Lock(b))
		_, err = r.TryLock(a, 200*time.Millisecond, 5*time.Second)
		assert.ErrorIs(t, err, ErrLocked)
		assert.False(t, redistest.Exists(t, f.rc, names[1]), "the free lock was given back")
		require.NoError(t, locks[0].Unlock(b))
		require.NoError(t, locks[2].Unlock(b))
	})

	t.Run("RD-06 one of three held elsewhere", func(t *testing.T) {
		r, err := NewRedLock(locks...)
		require.NoError(t, err)
		a, b := f.owners()
		require.NoError(t, locks[1].Lock(b))
		v, err := r.TryLock(a, 500*time.Millisecond, 5*time.Second)
		require.NoError(t, err)
		assert.True(t, v > 4*time.Second && v <= 5*time.Second, "validity %v", v)
		for _, name := range []string{names[0], names[2]} {
			ttl := redistest.PTTL(t, f.rc, name)
			assert.True(t, ttl > 4000 && ttl <= 5000, "%s: PTTL %d, the lease once the majority is held", name, ttl)
		}
		require.NoError(t, r.Unlock(a))
		require.NoError(t, locks[1].Unlock(b))
	})
}

// A group of write locks (and of read locks) holds each member with the member's own holder
// field: the group is held, its Validity and Held work, and Unlock releases every member.
func TestGroupOfReadWriteHalves(t *testing.T) {
	f := newFixture(t, Options{})
	for _, kind := range []string{"write", "read"} {
		t.Run(kind, func(t *testing.T) {
			half := func(name string) *Lock {
				rw := f.c.NewReadWriteLock(f.name + ":" + kind + ":" + name)
				if kind == "write" {
					return rw.WriteLock()
				}
				return rw.ReadLock()
			}
			a, b := half("a"), half("b")
			m, err := NewMultiLock(a, b)
			require.NoError(t, err)
			owner := NewOwner(f.base)
			require.NoError(t, m.TryLock(owner, time.Second, 0))
			for _, l := range []*Lock{a, b} {
				held, err := l.IsHeld(owner)
				require.NoError(t, err)
				assert.True(t, held, "%s held by the group's owner", l.Name())
			}
			held, err := m.IsHeld(owner)
			require.NoError(t, err)
			assert.True(t, held)
			_, err = m.Validity(owner)
			require.NoError(t, err)
			require.NoError(t, m.Unlock(owner))
			for _, l := range []*Lock{a, b} {
				assert.False(t, redistest.Exists(t, f.rc, l.Name()), "%s released", l.Name())
				assert.False(t, renewing(f.c, l.Name(), l.fieldOf(mustOwner(t, owner))), "%s no longer renewed", l.Name())
			}
		})
	}
}

// Closing a member's Client ends a group's wait with ErrClosed, as Client.Close does for the
// acquires it wakes, and as a group with such a member fails from the start; Held and
// Validity then report ErrClosed too.
func TestGroupMemberClientClosed(t *testing.T) {
	srv := redistest.Shared(t)
	base := redistest.Context(t, testTimeout)
	name := redistest.Name(t)
	c1, _ := newClient(t, srv, Options{})
	c2, rc := newClient(t, srv, Options{})
	other, _ := newClient(t, srv, Options{})
	holder := NewOwner(base)
	require.NoError(t, other.NewLock(name+":b").Lock(holder))
	m, err := NewMultiLock(c1.NewLock(name+":a"), c2.NewLock(name+":b"))
	require.NoError(t, err)
	owner := NewOwner(base)
	done := make(chan error, 1)
	go func() { done <- m.Lock(owner) }()
	require.True(t, redistest.Poll(10*time.Second, time.Millisecond, func() bool {
		return redistest.NumSub(t, rc, "redisson_lock__channel:{"+name+":b}") > 0
	}), "the group waits for b")
	c2.Close()
	select {
	case err := <-done:
		assert.ErrorIs(t, err, ErrClosed)
	case <-time.After(10 * time.Second):
		t.Fatal("the group still waits 10 s after a member's Client was closed")
	}
	assert.False(t, redistest.Exists(t, rc, name+":a"), "the member acquired while waiting was given back")
	_, _, err = m.Held(owner)
	assert.ErrorIs(t, err, ErrClosed)
	_, err = m.Validity(owner)
	assert.ErrorIs(t, err, ErrClosed)

	// The same for a RedLock waiting for a majority.
	cs := []*Client{c1, nil, nil}
	cs[1], _ = newClient(t, srv, Options{})
	cs[2], rc = newClient(t, srv, Options{})
	require.NoError(t, other.NewLock(name+":r1").Lock(holder))
	require.NoError(t, other.NewLock(name+":r2").Lock(holder))
	r, err := NewRedLock(cs[0].NewLock(name+":r0"), cs[1].NewLock(name+":r1"), cs[2].NewLock(name+":r2"))
	require.NoError(t, err)
	go func() {
		_, err := r.Lock(owner)
		done <- err
	}()
	require.True(t, redistest.Poll(10*time.Second, time.Millisecond, func() bool {
		return redistest.NumSub(t, rc, "redisson_lock__channel:{"+name+":r1}")+redistest.NumSub(t, rc, "redisson_lock__channel:{"+name+":r2}") > 0
	}), "the RedLock waits for r1 or r2")
	cs[2].Close()
	select {
	case err := <-done:
		assert.ErrorIs(t, err, ErrClosed)
	case <-time.After(10 * time.Second):
		t.Fatal("the RedLock still waits 10 s after a member's Client was closed")
	}
	assert.False(t, redistest.Exists(t, rc, name+":r0"), "the member acquired while waiting was given back")
}
