package rlock

import (
	"context"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/goredisson/goredisson/internal/redistest"
)

// rwFixture is a fixture with the read-write lock of the fixture's name.
type rwFixture struct {
	*fixture
	rw   *ReadWriteLock
	r, w *Lock
}

func newRWFixture(t testing.TB, opts Options) *rwFixture {
	t.Helper()
	f := newFixture(t, opts)
	rw := f.c.NewReadWriteLock(f.name)
	return &rwFixture{fixture: f, rw: rw, r: rw.ReadLock(), w: rw.WriteLock()}
}

// otherRW returns the fixture's read-write lock as seen by another Client on the same
// server.
func (f *rwFixture) otherRW(t testing.TB, opts Options) *ReadWriteLock {
	t.Helper()
	c, _ := newClient(t, f.srv, opts)
	return c.NewReadWriteLock(f.name)
}

// timeoutKey returns the k-th timeout key of the reader field of ctx's owner.
func (f *rwFixture) timeoutKey(t testing.TB, ctx context.Context, k int) string {
	return "{" + f.name + "}:" + f.c.field(mustOwner(t, ctx)) + ":rwlock_timeout:" + strconv.Itoa(k)
}

// acquiredWithin runs acquire on a goroutine and returns a channel that receives the time it
// returned nil.
func acquiredAt(t *testing.T, acquire func() error) <-chan time.Time {
	at := make(chan time.Time, 1)
	go func() {
		if assert.NoError(t, acquire()) {
			at <- time.Now()
		}
	}()
	return at
}

// within waits for a time on at and returns how long after from it came.
func within(t *testing.T, at <-chan time.Time, from time.Time, what string) time.Duration {
	t.Helper()
	select {
	case got := <-at:
		return got.Sub(from)
	case <-time.After(20 * time.Second):
		t.Fatalf("%s: never acquired", what)
	}
	return 0
}

// The hash, fields, timeout keys and TTLs that Go's read and write holds write are
// Redisson's.
func TestReadWriteLayout(t *testing.T) { // RW-20, RW-24
	f := newRWFixture(t, Options{})
	a, b := f.owners()
	fa, fb := f.c.field(mustOwner(t, a)), f.c.field(mustOwner(t, b))
	assert.Equal(t, f.name, f.rw.Name())

	require.NoError(t, f.r.Lock(a))
	require.NoError(t, f.r.LockFor(a, 10*time.Second))
	require.NoError(t, f.r.Lock(b))
	assert.Equal(t, map[string]string{"mode": "read", fa: "2", fb: "1"}, redistest.HGetAll(t, f.rc, f.name))
	assert.InDelta(t, 30000, redistest.PTTL(t, f.rc, f.name), 1000)
	assert.InDelta(t, 30000, redistest.PTTL(t, f.rc, f.timeoutKey(t, a, 1)), 1000)
	assert.InDelta(t, 10000, redistest.PTTL(t, f.rc, f.timeoutKey(t, a, 2)), 1000, "each acquisition has its own lease")
	assert.InDelta(t, 30000, redistest.PTTL(t, f.rc, f.timeoutKey(t, b, 1)), 1000)
	n, err := f.r.HoldCount(a)
	require.NoError(t, err)
	assert.Equal(t, 2, n)
	for _, c := range []struct {
		l    *Lock
		want bool
	}{{f.r, true}, {f.w, false}} {
		locked, err := c.l.IsLocked(f.base)
		require.NoError(t, err)
		assert.Equal(t, c.want, locked)
	}

	require.NoError(t, f.r.Unlock(a))
	assert.False(t, redistest.Exists(t, f.rc, f.timeoutKey(t, a, 2)), "the top timeout key goes with its release")
	require.NoError(t, f.r.Unlock(a))
	require.NoError(t, f.r.Unlock(b))
	assert.False(t, redistest.Exists(t, f.rc, f.name))

	require.NoError(t, f.w.Lock(a))
	require.NoError(t, f.w.Lock(a))
	assert.Equal(t, map[string]string{"mode": "write", fa + ":write": "2"}, redistest.HGetAll(t, f.rc, f.name))
	n, err = f.w.HoldCount(a)
	require.NoError(t, err)
	assert.Equal(t, 2, n, "the writer's field ends in :write")
	held, err := f.r.IsHeld(a)
	require.NoError(t, err)
	assert.False(t, held, "the write hold is not a read hold")
	locked, err := f.w.IsLocked(f.base)
	require.NoError(t, err)
	assert.True(t, locked)
	require.NoError(t, f.w.Unlock(a))
	require.NoError(t, f.w.Unlock(a))
	assert.Equal(t, 0, f.c.holds.count())
}

// Readers of two clients hold the lock together: eight readers all inside at once, which
// would never happen if reads excluded each other.
func TestReadersShare(t *testing.T) { // RW-11, RW-17
	f := newRWFixture(t, Options{})
	other := f.otherRW(t, Options{})
	const readers = 8
	var inside sync.WaitGroup
	inside.Add(readers)
	all := make(chan struct{})
	var wg sync.WaitGroup
	for i := range readers {
		r := f.r
		if i%2 == 1 {
			r = other.ReadLock()
		}
		wg.Go(func() {
			ctx := NewOwner(f.base)
			if !assert.NoError(t, r.Lock(ctx)) {
				inside.Done()
				return
			}
			inside.Done()
			<-all
			assert.NoError(t, r.Unlock(ctx))
		})
	}
	done := make(chan struct{})
	go func() { inside.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("the readers did not all get in together")
	}
	assert.Len(t, redistest.HGetAll(t, f.rc, f.name), readers+1, "the mode and one field per reader")
	close(all)
	wg.Wait()
	assert.False(t, redistest.Exists(t, f.rc, f.name))
}

// Readers and writers of three clients, with the overlap detector: readers overlap with
// each other, never with a writer; writers overlap with nobody.
func TestReadWriteExclusion(t *testing.T) { // RW-28, RW-29
	f := newRWFixture(t, Options{})
	locks := []*ReadWriteLock{f.rw, f.otherRW(t, Options{}), f.otherRW(t, Options{})}
	var ov redistest.RWOverlap
	var wg sync.WaitGroup
	for i := range 12 {
		rw := locks[i%len(locks)]
		wg.Go(func() {
			ctx := NewOwner(redistest.Context(t, time.Minute))
			for round := range 30 {
				l, enter := rw.ReadLock(), ov.EnterRead
				if (i+round)%4 == 0 {
					l, enter = rw.WriteLock(), ov.EnterWrite
				}
				if !assert.NoError(t, l.Lock(ctx)) {
					return
				}
				leave := enter()
				time.Sleep(time.Duration(round%3) * time.Millisecond) // let holds overlap
				leave()
				assert.NoError(t, l.Unlock(ctx))
			}
		})
	}
	wg.Wait()
	reads, writes := ov.Entries()
	assert.Zero(t, ov.Violations(), "a writer overlapped another holder")
	assert.Equal(t, int64(12*30), reads+writes)
	assert.Positive(t, writes)
	assert.Greater(t, ov.MaxShared(), int64(1), "readers never overlapped: reads were not shared")
	assert.False(t, redistest.Exists(t, f.rc, f.name))
	assert.Equal(t, 0, f.c.holds.count())
}

// A writer's release wakes every waiting reader at once, and the last reader's release wakes
// a waiting writer: both well under the 30 s watchdog lease they would otherwise wait out.
func TestReadWriteWakeUps(t *testing.T) { // RW-07, RW-11
	f := newRWFixture(t, Options{})
	other := f.otherRW(t, Options{})
	writer := NewOwner(f.base)
	require.NoError(t, f.w.Lock(writer))
	type reader struct {
		l   *Lock
		ctx context.Context
		at  <-chan time.Time
	}
	var readers []reader
	for i := range 4 {
		r := reader{l: f.r, ctx: NewOwner(f.base)}
		if i%2 == 1 {
			r.l = other.ReadLock()
		}
		r.at = acquiredAt(t, func() error { return r.l.Lock(r.ctx) })
		readers = append(readers, r)
	}
	ch := rwChannel(f.name)
	require.True(t, redistest.Poll(10*time.Second, 5*time.Millisecond, func() bool { return redistest.NumSub(t, f.rc, ch) == 2 }),
		"the readers of both clients never subscribed")
	released := time.Now()
	require.NoError(t, f.w.Unlock(writer))
	for i, r := range readers {
		d := within(t, r.at, released, "reader")
		assert.Less(t, d, 3*time.Second, "reader %d woke %v after the write release", i, d)
	}

	w := acquiredAt(t, func() error { return other.WriteLock().Lock(writer) })
	require.True(t, redistest.Poll(10*time.Second, 5*time.Millisecond, func() bool { return redistest.NumSub(t, f.rc, ch) == 1 }),
		"the writer never subscribed")
	for _, r := range readers[:3] {
		require.NoError(t, r.l.Unlock(r.ctx))
	}
	assert.Never(t, func() bool { return len(w) > 0 }, 200*time.Millisecond, 10*time.Millisecond, "the writer got in while a reader held")
	released = time.Now()
	require.NoError(t, readers[3].l.Unlock(readers[3].ctx))
	d := within(t, w, released, "writer")
	assert.Less(t, d, 3*time.Second, "the writer woke %v after the last read release", d)
	require.NoError(t, other.WriteLock().Unlock(writer))
}

// rwChannel is the read-write lock's channel, spelt out.
func rwChannel(name string) string { return "redisson_rwlock:{" + name + "}" }

// Redisson's rules between the halves: the writer may also read, and releasing the write
// then leaves the lock held for reading (a downgrade), which wakes other readers; a reader
// cannot take the write lock, not even alone.
func TestReadWriteDowngradeNoUpgrade(t *testing.T) { // RW-02, RW-10, RW-12
	f := newRWFixture(t, Options{})
	other := f.otherRW(t, Options{})
	a, b := f.owners()

	require.NoError(t, f.w.Lock(a))
	require.NoError(t, f.r.TryLock(a, 0, 0), "the writer reads at once")
	locked, err := f.r.IsLocked(f.base)
	require.NoError(t, err)
	assert.True(t, locked, "the writer's read counts as a read")
	readerB := acquiredAt(t, func() error { return other.ReadLock().Lock(b) })
	require.True(t, redistest.Poll(10*time.Second, 5*time.Millisecond, func() bool { return redistest.NumSub(t, f.rc, rwChannel(f.name)) == 1 }))
	released := time.Now()
	require.NoError(t, f.w.Unlock(a))
	assert.Equal(t, "read", redistest.HGetAll(t, f.rc, f.name)["mode"], "downgraded")
	d := within(t, readerB, released, "reader")
	assert.Less(t, d, 3*time.Second, "the downgrade wakes waiting readers (%v)", d)
	require.NoError(t, other.ReadLock().Unlock(b))

	assert.ErrorIs(t, f.w.TryLock(a, 100*time.Millisecond, 0), ErrUpgrade, "no upgrade, even for the only reader: refused at once")
	require.NoError(t, f.r.Unlock(a))
	assert.False(t, redistest.Exists(t, f.rc, f.name))
	require.NoError(t, f.w.TryLock(a, 0, 0))
	require.NoError(t, f.w.Unlock(a))
	assert.Equal(t, 0, f.c.holds.count())
}

// Each half is reentrant per owner, with its own count, and Unlock releases one
// acquisition; a reader's partial release keeps its Held context, the last one ends it.
func TestReadWriteReentrancy(t *testing.T) { // RW-27
	f := newRWFixture(t, Options{})
	a, b := f.owners()
	for range 3 {
		require.NoError(t, f.r.Lock(a))
	}
	held := mustHeld(t, f.r, a)
	for k := 1; k <= 3; k++ {
		assert.True(t, redistest.Exists(t, f.rc, f.timeoutKey(t, a, k)), "timeout key %d", k)
	}
	require.NoError(t, f.r.Unlock(a))
	require.NoError(t, f.r.Unlock(a))
	n, err := f.r.HoldCount(a)
	require.NoError(t, err)
	assert.Equal(t, 1, n)
	assert.NoError(t, held.Err(), "still held")
	assert.ErrorIs(t, f.w.TryLock(b, 0, 0), ErrLocked)
	require.NoError(t, f.r.Unlock(a))
	assert.ErrorIs(t, context.Cause(held), ErrReleased)
	assert.ErrorIs(t, f.r.Unlock(a), ErrNotHeld)

	require.NoError(t, f.w.Lock(a))
	require.NoError(t, f.w.Lock(a))
	require.NoError(t, f.w.Unlock(a))
	assert.ErrorIs(t, f.r.TryLock(b, 0, 0), ErrLocked, "one write hold remains")
	require.NoError(t, f.w.Unlock(a))
	require.NoError(t, f.r.TryLock(b, 0, 0))
	require.NoError(t, f.r.Unlock(b))
}

// Explicit leases: each half's hold ends with its lease, and Held says so first.
func TestReadWriteLeases(t *testing.T) { // RW-17, RW-18
	f := newRWFixture(t, Options{})
	other := f.otherRW(t, Options{})
	for _, half := range []struct {
		name      string
		l         *Lock
		otherHalf *Lock
	}{{"read", f.r, other.WriteLock()}, {"write", f.w, other.ReadLock()}} {
		t.Run(half.name, func(t *testing.T) {
			a, b := f.owners()
			require.NoError(t, half.l.LockFor(a, 400*time.Millisecond))
			held := mustHeld(t, half.l, a)
			assert.ErrorIs(t, half.otherHalf.TryLock(b, 0, 0), ErrLocked)
			require.NoError(t, half.otherHalf.TryLock(b, 5*time.Second, 0), "the lease runs out")
			assert.ErrorIs(t, held.Err(), context.Canceled, "Held ended before the other half was granted")
			assert.ErrorIs(t, context.Cause(held), ErrLeaseExpired)
			require.NoError(t, half.otherHalf.Unlock(b))
			assert.ErrorIs(t, half.l.Unlock(a), ErrNotHeld)
		})
	}
}

// A read re-entered with a longer lease keeps Held only as long as the shortest remaining
// acquisition is sure to live.
func TestReadReentryLeaseSafeUntil(t *testing.T) {
	f := newRWFixture(t, Options{})
	a := NewOwner(f.base)
	field := f.c.field(mustOwner(t, a))
	require.NoError(t, f.r.LockFor(a, 2*time.Second))
	first := holdSafeUntil(f.c, f.name, field)
	require.NoError(t, f.r.LockFor(a, 20*time.Second))
	assert.Equal(t, first, holdSafeUntil(f.c, f.name, field), "a longer re-entry does not move safe-until")
	require.NoError(t, f.r.Unlock(a)) // the 20 s acquisition goes; the 2 s one remains
	assert.LessOrEqual(t, redistest.PTTL(t, f.rc, f.name), int64(2000), "the lock lives as long as the remaining timeout key")
	require.NoError(t, f.r.LockFor(a, 500*time.Millisecond))
	assert.True(t, holdSafeUntil(f.c, f.name, field).Before(first), "a shorter re-entry moves it earlier")
	require.NoError(t, f.r.Unlock(a))
	require.NoError(t, f.r.Unlock(a))
}

// The watchdog renews both halves, a read hold with its timeout keys: another client's
// reader that releases long after the first leases would have run out finds the watchdog
// reader's keys alive and leaves the lock held, and so does a writer's hold.
func TestReadWriteWatchdog(t *testing.T) { // RW-03
	const lease = 600 * time.Millisecond
	f := newRWFixture(t, Options{WatchdogTimeout: lease})
	other := f.otherRW(t, Options{})
	a, b := f.owners()

	require.NoError(t, f.r.Lock(a))
	require.NoError(t, f.r.Lock(a))
	held := mustHeld(t, f.r, a)
	require.NoError(t, other.ReadLock().LockFor(b, time.Minute))
	renewed := f.c.wheel.Stats().Renewed
	require.True(t, redistest.Poll(20*time.Second, 10*time.Millisecond, func() bool { return f.c.wheel.Stats().Renewed >= renewed+8 }),
		"eight renewals, over several leases")
	for k := 1; k <= 2; k++ {
		assert.Greater(t, redistest.PTTL(t, f.rc, f.timeoutKey(t, a, k)), int64(0), "timeout key %d renewed", k)
	}
	require.NoError(t, other.ReadLock().Unlock(b))
	assert.True(t, redistest.Exists(t, f.rc, f.name), "the watchdog reader's timeout keys keep the lock")
	assert.NoError(t, held.Err())
	require.NoError(t, f.r.Unlock(a))
	require.NoError(t, f.r.Unlock(a))
	assert.False(t, redistest.Exists(t, f.rc, f.name))

	require.NoError(t, f.w.Lock(a))
	wheld := mustHeld(t, f.w, a)
	renewed = f.c.wheel.Stats().Renewed
	require.True(t, redistest.Poll(20*time.Second, 10*time.Millisecond, func() bool { return f.c.wheel.Stats().Renewed >= renewed+4 }))
	assert.ErrorIs(t, other.ReadLock().TryLock(b, 0, 0), ErrLocked)
	assert.NoError(t, wheld.Err())
	require.NoError(t, f.w.Unlock(a))
	assert.ErrorIs(t, context.Cause(wheld), ErrReleased)
}

// Lost holds are signalled: a read lock force-unlocked by another client ends the reader's
// Held at its next renewal (ErrRemoved); ForceUnlock of the other half changes nothing; this
// client's own ForceUnlock ends its holds with ErrForceUnlocked.
func TestReadWriteLostHolds(t *testing.T) { // RW-15
	f := newRWFixture(t, Options{WatchdogTimeout: 900 * time.Millisecond})
	other := f.otherRW(t, Options{})
	a, b := f.owners()

	require.NoError(t, f.r.Lock(a))
	held := mustHeld(t, f.r, a)
	ok, err := other.WriteLock().ForceUnlock(f.base)
	require.NoError(t, err)
	assert.False(t, ok, "the write half does not end a read")
	assert.NoError(t, held.Err())
	ok, err = other.ReadLock().ForceUnlock(f.base)
	require.NoError(t, err)
	require.True(t, ok)
	select {
	case <-held.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the force-unlock was never signalled")
	}
	assert.ErrorIs(t, context.Cause(held), ErrRemoved)
	assert.ErrorIs(t, f.r.Unlock(a), ErrNotHeld)

	require.NoError(t, f.w.Lock(b))
	require.NoError(t, f.r.Lock(b))
	wheld, rheld := mustHeld(t, f.w, b), mustHeld(t, f.r, b)
	ok, err = f.r.ForceUnlock(f.base)
	require.NoError(t, err)
	assert.False(t, ok, "the read half does not end a write")
	assert.NoError(t, wheld.Err())
	ok, err = f.w.ForceUnlock(f.base)
	require.NoError(t, err)
	require.True(t, ok)
	assert.ErrorIs(t, context.Cause(wheld), ErrForceUnlocked)
	assert.ErrorIs(t, context.Cause(rheld), ErrForceUnlocked, "the writer's reads went with the hash")
	assert.Equal(t, 0, f.c.holds.count())
}

// Writer starvation: Redisson gives a waiting writer no priority, and neither do we. While
// readers keep the lock in read mode without a gap (each new reader enters before the
// previous one leaves), a writer waits as long as they go on; what is promised is that the
// writer gets in as soon as the reads stop, woken by the last reader's release rather than by
// a lease.
func TestWriterWaitsOutOverlappingReaders(t *testing.T) {
	f := newRWFixture(t, Options{})
	other := f.otherRW(t, Options{})
	stop := make(chan struct{})
	var reads atomic.Int64
	readersDone := make(chan time.Time, 1)
	started := make(chan struct{})
	go func() {
		defer func() { readersDone <- time.Now() }()
		prev := NewOwner(f.base)
		if !assert.NoError(t, f.r.Lock(prev)) {
			return
		}
		close(started)
		defer func() { assert.NoError(t, f.r.Unlock(prev)) }() // the last reader leaves
		for {
			select {
			case <-stop:
				return
			default:
			}
			next := NewOwner(f.base)
			if !assert.NoError(t, f.r.Lock(next)) {
				return
			}
			reads.Add(1)
			assert.NoError(t, f.r.Unlock(prev))
			prev = next
		}
	}()
	select {
	case <-started:
	case <-readersDone:
		t.Fatal("the first reader never got in")
	}
	writer := NewOwner(f.base)
	err := other.WriteLock().TryLock(writer, time.Second, 0)
	assert.ErrorIs(t, err, ErrLocked, "the writer got in while reads overlapped")
	w := acquiredAt(t, func() error { return other.WriteLock().Lock(writer) })
	require.True(t, redistest.Poll(10*time.Second, 5*time.Millisecond, func() bool { return redistest.NumSub(t, f.rc, rwChannel(f.name)) == 1 }))
	close(stop)
	var last time.Time
	select {
	case last = <-readersDone:
	case <-time.After(20 * time.Second):
		t.Fatal("the readers never stopped")
	}
	d := within(t, w, last, "writer")
	t.Logf("%d overlapping reads while the writer waited; the writer got in %v after the last", reads.Load(), d)
	assert.Positive(t, reads.Load())
	assert.Less(t, d, 3*time.Second, "the writer is woken by the last release, not by the 30 s lease")
	require.NoError(t, other.WriteLock().Unlock(writer))
}

// Bad input and misuse get the errors every Lock gives, naming the call and the lock.
func TestReadWriteMisuse(t *testing.T) { // RW-25
	f := newRWFixture(t, Options{})
	a, b := f.owners()
	err := f.r.Unlock(a)
	assert.ErrorIs(t, err, ErrNotHeld)
	assert.Equal(t, `rlock: Unlock "`+f.name+`": not held by this owner`, err.Error())
	require.NoError(t, f.r.Lock(b))
	assert.NotErrorIs(t, f.r.Unlock(a), errHeldByOther, "readers share: another reader holding is no misuse")
	err = f.w.Unlock(b)
	assert.ErrorIs(t, err, ErrNotHeld, "a read hold is not released by the write half")
	assert.NotErrorIs(t, err, errHeldByOther, "the owner's own read is no other owner")
	require.NoError(t, f.r.Unlock(b))
	assert.ErrorIs(t, f.c.NewReadWriteLock("").ReadLock().Lock(a), ErrEmptyName)
	assert.ErrorIs(t, f.w.Lock(f.base), ErrNoOwner)
	assert.ErrorIs(t, f.w.TryLock(a, -1, 0), ErrInvalidWait)
	assert.ErrorIs(t, f.r.LockFor(a, 0), ErrInvalidLease)
	f.c.Close()
	assert.ErrorIs(t, f.r.Lock(a), ErrClosed)
}

// Do and TryDo run under either half.
func TestReadWriteDo(t *testing.T) {
	f := newRWFixture(t, Options{})
	var ran int
	require.NoError(t, f.r.Do(f.base, func(ctx context.Context) error {
		ran++
		return f.r.Do(ctx, func(context.Context) error { ran++; return nil }) // re-entry, same owner
	}))
	require.NoError(t, f.w.TryDo(f.base, time.Second, func(ctx context.Context) error {
		ran++
		mode, err := f.rc.Do(ctx, f.rc.B().Hget().Key(f.name).Field("mode").Build()).ToString()
		assert.NoError(t, err)
		assert.Equal(t, "write", mode)
		return nil
	}))
	assert.Equal(t, 3, ran)
	assert.False(t, redistest.Exists(t, f.rc, f.name))
}

// Both halves go through replica sync: a read acquisition, with its timeout key, and a
// write acquisition are on the replica when Lock returns, and so is a read renewal; with
// the replica paused, a read re-entry that no replica confirmed is given back (its timeout
// key with it) and the earlier read stays, with its safe-until.
func TestReplicaSyncReadWrite(t *testing.T) { // RW-06 (replicated)
	p := startReplicated(t)
	// A lease long enough for the paused replica's three tries (about 0.7 s) not to end the
	// first read, whose renewals fail while the replica is paused.
	c, _ := newClient(t, p.master, Options{ReplicaSync: ReplicaSyncOn, ReplicaSyncTimeout: 100 * time.Millisecond,
		WatchdogTimeout: 3 * time.Second})
	ctx := NewOwner(redistest.Context(t, 30*time.Second))
	name := redistest.Name(t)
	rw := c.NewReadWriteLock(name)
	field := c.field(mustOwner(t, ctx))
	key := func(k int) string { return "{" + name + "}:" + field + ":rwlock_timeout:" + strconv.Itoa(k) }

	require.NoError(t, rw.ReadLock().Lock(ctx))
	assert.Equal(t, redistest.HGetAll(t, p.m, name), redistest.HGetAll(t, p.r, name), "on the replica when Lock returns")
	assert.True(t, redistest.Exists(t, p.r, key(1)), "with its timeout key")
	waits := newCounter(t, p.m, "wait")
	renewed := c.wheel.Stats().Renewed
	require.True(t, redistest.Poll(10*time.Second, 10*time.Millisecond, func() bool { return c.wheel.Stats().Renewed >= renewed+2 }))
	assert.Positive(t, waits.delta(), "read renewals wait for the replica")
	assert.Zero(t, c.wheel.Stats().Failed)

	held := mustHeld(t, rw.ReadLock(), ctx)
	before := holdSafeUntil(c, name, field)
	resume := p.pauseReplica(t)
	require.ErrorIs(t, rw.ReadLock().LockFor(ctx, 20*time.Second), ErrNotReplicated)
	assert.Equal(t, map[string]string{"mode": "read", field: "1"}, redistest.HGetAll(t, p.m, name), "the first read stays")
	assert.False(t, redistest.Exists(t, p.m, key(2)), "the given-back read's timeout key is gone")
	assert.False(t, holdSafeUntil(c, name, field).Before(before.Add(-time.Second)), "safe-until not moved by the give-back")
	assert.NoError(t, held.Err())
	resume()
	require.NoError(t, rw.ReadLock().Unlock(ctx))
	assert.ErrorIs(t, context.Cause(held), ErrReleased)

	require.NoError(t, rw.WriteLock().Lock(ctx))
	assert.Equal(t, map[string]string{"mode": "write", field + ":write": "1"}, redistest.HGetAll(t, p.r, name), "on the replica")
	require.NoError(t, rw.WriteLock().Unlock(ctx))
	assert.Equal(t, 0, c.holds.count())
}

// Acquisitions of either half cancelled while in flight leave nothing held, renewed, or
// behind in Redis: no hold, no field, no timeout key (RL-03 for the read-write lock).
func TestReadWriteCancelledAcquireLeavesNothing(t *testing.T) { // RL-03
	f := newRWFixture(t, Options{WatchdogTimeout: 500 * time.Millisecond})
	other := NewOwner(f.base)
	require.NoError(t, f.r.Lock(other)) // a reader that stays, so that given-back reads are partial releases
	cancelled := 0
	for i := range 600 {
		l := f.r
		if i%3 == 0 {
			l = f.w // fails or waits: the reader holds
		}
		ctx, cancel := context.WithCancel(NewOwner(context.Background()))
		go func() {
			time.Sleep(time.Duration(i%150) * time.Microsecond)
			cancel()
		}()
		if err := l.Lock(ctx); err == nil {
			require.NoError(t, l.Unlock(ctx))
		} else {
			require.ErrorIs(t, err, context.Canceled)
			cancelled++
		}
		cancel()
	}
	t.Logf("%d of 600 acquisitions cancelled", cancelled)
	require.NoError(t, f.r.Unlock(other))
	require.True(t, redistest.Poll(5*time.Second, 10*time.Millisecond, func() bool {
		keys, err := f.rc.Do(f.base, f.rc.B().Keys().Pattern("{"+f.name+"}*").Build()).AsStrSlice()
		require.NoError(t, err)
		return f.c.holds.count() == 0 && !redistest.Exists(t, f.rc, f.name) && len(keys) == 0
	}), "a hold, the lock or a timeout key was left behind")
}

// RW-01, RW-08: a reader with a short lease, leaving, does not cut another reader's longer
// lease: a writer gets in only once the longer lease has run out.
func TestShortReaderKeepsLongerReadersLease(t *testing.T) {
	f := newRWFixture(t, Options{})
	other := f.otherRW(t, Options{})
	a, b := f.owners()
	require.NoError(t, f.r.LockFor(a, 2*time.Second))
	longEnds := time.Now().Add(2 * time.Second)
	require.NoError(t, other.ReadLock().LockFor(b, 300*time.Millisecond))
	require.NoError(t, other.ReadLock().Unlock(b))
	assert.Greater(t, redistest.PTTL(t, f.rc, f.name), int64(1000), "the lock keeps the longer reader's TTL")
	w := NewOwner(f.base)
	require.NoError(t, other.WriteLock().TryLock(w, 10*time.Second, 0))
	assert.False(t, time.Now().Before(longEnds.Add(-100*time.Millisecond)), "the writer got in before the long read's lease ran out")
	require.NoError(t, other.WriteLock().Unlock(w))
}

// RW-05: a write re-entry with a shorter lease does not shorten the lock: Redisson adds the
// re-entry's lease to the TTL.
func TestWriteReentryShorterLeaseKeepsTTL(t *testing.T) {
	f := newRWFixture(t, Options{})
	a := NewOwner(f.base)
	require.NoError(t, f.w.LockFor(a, 2*time.Second))
	require.NoError(t, f.w.TryLock(a, 0, 200*time.Millisecond))
	assert.Greater(t, redistest.PTTL(t, f.rc, f.name), int64(2000), "PTTL + the re-entry's lease")
	assert.ErrorIs(t, f.otherRW(t, Options{}).WriteLock().TryLock(NewOwner(f.base), 500*time.Millisecond, 0), ErrLocked)
	require.NoError(t, f.w.Unlock(a))
	require.NoError(t, f.w.Unlock(a))
}

// RW-16: after a downgrade the read hold keeps being renewed by the watchdog, for several
// leases.
func TestDowngradeKeepsReadRenewed(t *testing.T) {
	const lease = 600 * time.Millisecond
	f := newRWFixture(t, Options{WatchdogTimeout: lease})
	a := NewOwner(f.base)
	require.NoError(t, f.w.Lock(a))
	require.NoError(t, f.r.Lock(a))
	require.NoError(t, f.w.Unlock(a))
	held := mustHeld(t, f.r, a)
	renewed := f.c.wheel.Stats().Renewed
	require.True(t, redistest.Poll(20*time.Second, 10*time.Millisecond, func() bool { return f.c.wheel.Stats().Renewed >= renewed+6 }),
		"six renewals, over two leases")
	assert.Equal(t, "read", redistest.HGetAll(t, f.rc, f.name)["mode"])
	assert.Positive(t, redistest.PTTL(t, f.rc, f.timeoutKey(t, a, 1)))
	assert.NoError(t, held.Err())
	require.NoError(t, f.r.Unlock(a))
}

// RW-31: a client that closed without releasing its read leaves a field whose timeout key
// nobody renews (each client renews only its own readers' keys): once that key expires, the
// last live reader's release frees the lock and a writer gets in.
func TestDeadReaderDoesNotBlockWriterForever(t *testing.T) {
	const lease = 600 * time.Millisecond
	f := newRWFixture(t, Options{WatchdogTimeout: lease})
	dead := f.otherRW(t, Options{WatchdogTimeout: lease})
	a, b := f.owners()
	require.NoError(t, dead.ReadLock().Lock(a))
	dead.ReadLock().c.Close() // shut down without unlocking
	require.NoError(t, f.r.Lock(b))
	renewed := f.c.wheel.Stats().Renewed
	require.True(t, redistest.Poll(20*time.Second, 10*time.Millisecond, func() bool { return f.c.wheel.Stats().Renewed >= renewed+6 }),
		"b's read renewed over two leases")
	assert.Len(t, redistest.HGetAll(t, f.rc, f.name), 3, "the dead reader's field is still there")
	require.NoError(t, f.r.Unlock(b))
	require.NoError(t, f.w.TryLock(b, 2*time.Second, 0), "the dead reader's expired timeout key does not hold the lock")
	require.NoError(t, f.w.Unlock(b))
}
