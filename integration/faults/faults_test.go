package faults

import (
	"context"
	"math/rand/v2"
	"syscall"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/goredisson/goredisson/internal/faultproxy"
	"github.com/goredisson/goredisson/internal/redistest"
	"github.com/goredisson/goredisson/internal/redistest/rlocktest"
	"github.com/goredisson/goredisson/lua"
	"github.com/goredisson/goredisson/rlock"
)

// F1: kill -9 of a client process that holds a watchdog lock. The waiter gets the lock
// within the lease, with no publish, and nothing is left renewed.
func TestF1KilledHolderProcess(t *testing.T) {
	srv := redistest.Shared(t)
	rc := srv.Client(t)
	name := redistest.Name(t)
	const watchdog = time.Second
	holder := startHolder(t, srv.Addr, name, watchdog)
	l := rlocktest.NewClient(t, rc, rlock.Options{}).NewLock(name)
	ctx := ownerCtx(t, 30*time.Second)
	holder.signal(syscall.SIGKILL)
	killed := time.Now()
	require.NoError(t, l.Lock(ctx))
	took := time.Since(killed)
	t.Logf("waiter acquired %v after the holder was killed (lease %v)", took, watchdog)
	assert.Less(t, took, watchdog+500*time.Millisecond)
	require.NoError(t, l.Unlock(ctx))
	assert.False(t, redistest.Exists(t, rc, name), "no key left behind")
}

// F4: SIGSTOP of a holder process for longer than its lease. Another client acquires after
// expiry; the resumed holder is told it lost the lock, its unlock fails, and the fenced
// resource rejects its stale write. The overlap checker flags the pause window, explained by
// the loss signal: this is what fencing is for.
func TestF4PausedHolderProcess(t *testing.T) {
	srv := redistest.Shared(t)
	rc := srv.Client(t)
	name := redistest.Name(t)
	const watchdog = 900 * time.Millisecond
	h := newHistory()
	holder := startHolder(t, srv.Addr, name, watchdog)
	h.add("holder", "acquired")
	holder.signal(syscall.SIGSTOP)

	l := rlocktest.NewClient(t, rc, rlock.Options{}).NewLock(name)
	ctx := ownerCtx(t, 30*time.Second)
	require.NoError(t, l.Lock(ctx), "the lease of the paused holder runs out")
	h.add("waiter", "acquired")
	tok, err := token(ctx, rc, name)
	require.NoError(t, err)
	require.Greater(t, tok, holder.token)
	ok, err := write(ctx, rc, name, tok, "waiter")
	require.NoError(t, err)
	require.True(t, ok)

	holder.signal(syscall.SIGCONT)
	lost := holder.next("lost", 10*time.Second)
	h.add("holder", "lost")
	assert.Contains(t, lost, "lock_lost")
	holder.send("write")
	assert.Equal(t, "write rejected", holder.next("write", 10*time.Second), "the stale token is fenced off")
	holder.send("unlock")
	assert.Contains(t, holder.next("unlock", 10*time.Second), "not_held")

	h.add("waiter", "releasing")
	require.NoError(t, l.Unlock(ctx))
	explained, violations := h.overlaps()
	assert.Empty(t, violations)
	assert.Len(t, explained, 1, "the pause window overlaps, and the loss signal explains it")
	data, err := rc.Do(ctx, rc.B().Get().Key("fence:"+name+":data").Build()).ToString()
	require.NoError(t, err)
	assert.Equal(t, "waiter", data)
}

// F4 with a FencedLock: the tokens come from the lock itself. A holder process paused past
// its lease holds token n; the next holder's acquisition is issued a larger one, and the
// fenced resource rejects the resumed holder's write, made with its stale token.
func TestF4FencedLockPausedHolder(t *testing.T) {
	srv := redistest.Shared(t)
	rc := srv.Client(t)
	name := redistest.Name(t)
	const watchdog = 900 * time.Millisecond
	holder := startHolderOf(t, "fenced", srv.Addr, name, watchdog)
	holder.signal(syscall.SIGSTOP)

	c, err := rlock.New(context.Background(), rc, rlock.Options{})
	require.NoError(t, err)
	t.Cleanup(c.Close)
	f := c.NewFencedLock(name)
	ctx := rlock.NewOwner(redistest.Context(t, 30*time.Second))
	tok, err := f.Lock(ctx)
	require.NoError(t, err, "the lease of the paused holder runs out")
	require.Greater(t, tok, holder.token)
	ok, err := write(ctx, rc, name, tok, "waiter")
	require.NoError(t, err)
	require.True(t, ok)

	holder.signal(syscall.SIGCONT)
	assert.Contains(t, holder.next("lost", 10*time.Second), "lock_lost")
	holder.send("write")
	assert.Equal(t, "write rejected", holder.next("write", 10*time.Second), "the stale token is fenced off")
	holder.send("unlock")
	assert.Contains(t, holder.next("unlock", 10*time.Second), "not_held")
	require.NoError(t, f.Unlock(ctx))
	data, err := rc.Do(ctx, rc.B().Get().Key("fence:"+name+":data").Build()).ToString()
	require.NoError(t, err)
	assert.Equal(t, "waiter", data)
	t.Logf("paused holder's token %d, next holder's %d", holder.token, tok)
}

// F5: redis-server stopped (SIGSTOP) under in-flight acquire, renew and unlock. Every call
// returns by its bound (an acquire in flight when its ctx ends: ReleaseTimeout, as the
// server does not answer), an abandoned acquire leaves no renewed hold, and renewal
// reports the loss.
func TestF5PausedServer(t *testing.T) {
	srv := redistest.Start(t)
	rc := srv.Client(t)
	name, other := redistest.Name(t), redistest.Name(t)
	const releaseTimeout = 1500 * time.Millisecond
	c := rlocktest.NewClient(t, rc, rlock.Options{WatchdogTimeout: 900 * time.Millisecond, ReleaseTimeout: releaseTimeout})
	l := c.NewLock(name)
	held := ownerCtx(t, time.Minute)
	require.NoError(t, l.Lock(held))
	work := rlocktest.Held(t, l, held)
	lo := c.NewLock(other)

	srv.Pause(t)
	paused := time.Now()
	short, cancel := context.WithTimeout(rlock.NewOwner(context.Background()), 300*time.Millisecond)
	defer cancel()
	err := lo.Lock(short)
	took := time.Since(paused)
	assert.ErrorIs(t, err, context.DeadlineExceeded)
	t.Logf("an acquire in flight on the stopped server returned after %v (deadline 300ms, ReleaseTimeout %v)", took, releaseTimeout)
	assert.Less(t, took, releaseTimeout+time.Second, "the acquire returned by ReleaseTimeout, the server being stopped")

	select { // the watchdog cannot renew: the lease must have run out
	case <-work.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("no loss signalled while the server was stopped")
	}
	assert.ErrorIs(t, context.Cause(work), rlock.ErrLeaseExpired)

	// Held ended before the server could expire the key (safe-until); once the server runs
	// again, the key expires and the owner's Unlock finds nothing to release.
	srv.Resume(t)
	require.Eventually(t, func() bool { return !redistest.Exists(t, rc, name) }, 10*time.Second, 5*time.Millisecond,
		"the key expires with the lease that was not renewed")
	assert.ErrorIs(t, l.Unlock(held), rlock.ErrNotHeld)
	require.Eventually(t, func() bool { return !redistest.Exists(t, rc, other) }, 10*time.Second, 10*time.Millisecond,
		"a hold the abandoned acquire took is not renewed")
	require.NoError(t, lo.Lock(ownerCtx(t, 10*time.Second)), "and the lock is free")
}

// F6: the pub/sub connection is cut while a waiter waits and the release is published.
// The waiter still acquires, well within the holder's lease.
func TestF6CutSubscription(t *testing.T) {
	srv := redistest.Shared(t)
	rc := srv.Client(t)
	name := redistest.Name(t)
	la := rlocktest.NewClient(t, srv.Client(t), rlock.Options{}).NewLock(name)
	lb := rlocktest.NewClient(t, srv.Client(t), rlock.Options{}).NewLock(name)
	holder, waiter := ownerCtx(t, time.Minute), ownerCtx(t, time.Minute)
	require.NoError(t, la.LockFor(holder, 5*time.Second))
	tries := redistest.Calls(t, rc, "pttl")
	got := make(chan time.Time, 1)
	go func() {
		assert.NoError(t, lb.Lock(waiter))
		got <- time.Now()
	}()
	ch := "redisson_lock__channel:{" + name + "}"
	require.Eventually(t, func() bool { return redistest.NumSub(t, rc, ch) == 1 }, 5*time.Second, time.Millisecond)
	// The waiter shares its connection with its subscription: cut it once the waiter is asleep
	// (tried, subscribed, tried again), not while an acquire is in flight on it.
	require.Eventually(t, func() bool { return redistest.Calls(t, rc, "pttl") >= tries+2 }, 5*time.Second, time.Millisecond)
	redistest.KillSubscribers(t, rc)
	released := time.Now()
	require.NoError(t, la.Unlock(holder))
	took := (<-got).Sub(released)
	t.Logf("acquired %v after the release, with the subscription cut", took)
	assert.Less(t, took, 5*time.Second, "within the holder's lease")
	require.NoError(t, lb.Unlock(waiter))
}

// F6, at the subscription's start: the connection of a waiter's first subscription is cut
// as the subscription is made (its SUBSCRIBE delivered, the reply lost). The subscription
// fails; the waiter asks for it again, as it tries again after a try lost to the
// connection, rather than returning the error, and acquires once the holder releases.
func TestF6CutFirstSubscription(t *testing.T) {
	srv := redistest.Shared(t)
	rc := srv.Client(t)
	name := redistest.Name(t)
	la := rlocktest.NewClient(t, srv.Client(t), rlock.Options{}).NewLock(name)
	p, prc := proxied(t, srv.Addr)
	lb := rlocktest.NewClient(t, prc, rlock.Options{}).NewLock(name)
	holder, waiter := ownerCtx(t, time.Minute), ownerCtx(t, time.Minute)
	require.NoError(t, la.LockFor(holder, 10*time.Second))
	ch := "redisson_lock__channel:{" + name + "}"
	p.CutAfterRequest(ch) // only the waiter's SUBSCRIBE names the channel on that proxy
	got := make(chan error, 1)
	go func() { got <- lb.Lock(waiter) }()
	require.Eventually(t, func() bool { return redistest.NumSub(t, rc, ch) == 1 }, 10*time.Second, time.Millisecond,
		"the waiter subscribed again")
	require.NoError(t, la.Unlock(holder))
	select {
	case err := <-got:
		require.NoError(t, err, "the waiter's Lock")
	case <-time.After(10 * time.Second):
		t.Fatal("the waiter did not acquire within 10 s of the release")
	}
	require.NoError(t, lb.Unlock(waiter))
}

// F7: the reply of a delivered request is lost (the connection is cut right after the
// request). A lost unlock reply is retried with the same request id: a full release (the
// owner's last hold), which writes no latch, finds its field gone and reports success; a
// partial release replays its latch and is counted once. A lost acquire reply is reported
// as an error, and the hold it may have taken is released (or ends with its lease, never
// renewed). A waiter whose attempt's reply was lost releases that hold and tries again: it
// holds the lock once, not twice.
func TestF7LostReply(t *testing.T) {
	srv := redistest.Shared(t)
	direct := srv.Client(t)
	p, rc := proxied(t, srv.Addr)
	c := rlocktest.NewClient(t, rc, rlock.Options{WatchdogTimeout: time.Second})
	ctx := ownerCtx(t, 30*time.Second)
	// Load the scripts first: a cut EVALSHA that got NOSCRIPT would not have run at all.
	warm := c.NewLock(redistest.Name(t))
	require.NoError(t, warm.Lock(ctx))
	require.NoError(t, warm.Unlock(ctx))

	t.Run("unlock", func(t *testing.T) {
		name := redistest.Name(t)
		l := c.NewLock(name)
		require.NoError(t, l.Lock(ctx))
		ch := "redisson_lock__channel:{" + name + "}"
		msgs := srv.Listen(t, ch)
		runs := redistest.Calls(t, direct, "hget") // once per run of the release script without a replay
		p.CutAfterRequest(lua.Release.SHA1())
		require.NoError(t, l.Unlock(ctx), "the retried full release finds the field gone and reports success")
		assert.Equal(t, int64(2), redistest.Calls(t, direct, "hget")-runs, "the release ran, and ran again as a retry")
		assert.False(t, redistest.Exists(t, direct, name))
		assert.Equal(t, []string{"0"}, redistest.Published(t, direct, ch, msgs), "the release is published once")
		assert.Empty(t, latches(t, direct, name), "a full release writes no latch")
		assert.ErrorIs(t, l.Unlock(ctx), rlock.ErrNotHeld, "and the hold is over")
	})

	t.Run("partial unlock", func(t *testing.T) {
		name := redistest.Name(t)
		l := c.NewLock(name)
		require.NoError(t, l.Lock(ctx))
		require.NoError(t, l.Lock(ctx))
		ch := "redisson_lock__channel:{" + name + "}"
		msgs := srv.Listen(t, ch)
		replays := redistest.Calls(t, direct, "get") // only a retry reads the latch
		p.CutAfterRequest(lua.Release.SHA1())
		require.NoError(t, l.Unlock(ctx), "the retried partial release replays its latch")
		assert.Equal(t, int64(1), redistest.Calls(t, direct, "get")-replays, "the retry read the latch")
		assert.Equal(t, map[string]string{c.ID() + ":" + ownerID(t, ctx): "1"}, redistest.HGetAll(t, direct, name),
			"one hold released, not two")
		assert.Empty(t, redistest.Published(t, direct, ch, msgs), "a partial release publishes nothing")
		require.NoError(t, l.Unlock(ctx), "the last hold is still there to release")
		assert.False(t, redistest.Exists(t, direct, name))
		assert.Equal(t, []string{"0"}, redistest.Published(t, direct, ch, msgs))
		require.Eventually(t, func() bool { return len(latches(t, direct, name)) == 0 }, 5*time.Second, 10*time.Millisecond,
			"the partial release's latch is deleted in the background")
	})

	// The other kinds on the shared release path: the fair and the write release write no
	// latch for the last hold either; the read release keeps its latch, which the retry
	// replays.
	for _, k := range []struct {
		kind   string
		script lua.Script
		lock   func(name string) *rlock.Lock
		latch  bool
	}{
		{"fair", lua.FairRelease, c.NewFairLock, false},
		{"write", lua.WriteRelease, func(name string) *rlock.Lock { return c.NewReadWriteLock(name).WriteLock() }, false},
		{"read", lua.ReadRelease, func(name string) *rlock.Lock { return c.NewReadWriteLock(name).ReadLock() }, true},
	} {
		t.Run(k.kind+" unlock", func(t *testing.T) {
			warm := k.lock(redistest.Name(t) + "-warm")
			require.NoError(t, warm.Lock(ctx))
			require.NoError(t, warm.Unlock(ctx))
			name := redistest.Name(t)
			l := k.lock(name)
			require.NoError(t, l.Lock(ctx))
			replays := redistest.Calls(t, direct, "get")
			p.CutAfterRequest(k.script.SHA1())
			require.NoError(t, l.Unlock(ctx), "the retried full release reports success")
			assert.False(t, redistest.Exists(t, direct, name))
			assert.ErrorIs(t, l.Unlock(ctx), rlock.ErrNotHeld, "and the hold is over")
			if k.latch {
				assert.Equal(t, int64(1), redistest.Calls(t, direct, "get")-replays, "the retry replayed the latch")
				require.Eventually(t, func() bool { return len(latches(t, direct, name)) == 0 }, 5*time.Second, 10*time.Millisecond,
					"the latch is deleted in the background")
			} else {
				assert.Empty(t, latches(t, direct, name), "a full release writes no latch")
			}
		})
	}

	t.Run("acquire", func(t *testing.T) {
		name := redistest.Name(t)
		p.CutAfterRequest(lua.Acquire.SHA1())
		err := c.NewLock(name).Lock(ctx)
		require.Error(t, err, "an acquire whose reply was lost is not reported as held")
		t.Logf("acquire with a lost reply: %v", err)
		require.Eventually(t, func() bool { return !redistest.Exists(t, direct, name) }, 5*time.Second, 10*time.Millisecond,
			"a hold taken by it is released (or, when the request reached Redis after the release, ends with its lease), never renewed")
	})

	t.Run("acquire while waiting", func(t *testing.T) {
		name := redistest.Name(t)
		holder := rlocktest.NewClient(t, direct, rlock.Options{})
		hctx := ownerCtx(t, 30*time.Second)
		require.NoError(t, holder.NewLock(name).Lock(hctx))
		l := c.NewLock(name)
		done := make(chan error, 1)
		go func() { done <- l.Lock(ctx) }()
		require.True(t, redistest.Poll(10*time.Second, time.Millisecond, func() bool {
			return redistest.NumSub(t, direct, "redisson_lock__channel:{"+name+"}") > 0
		}), "the waiter subscribed")
		p.CutAfterRequest(lua.Acquire.SHA1())
		require.NoError(t, holder.NewLock(name).Unlock(hctx))
		select {
		case err := <-done:
			require.NoError(t, err, "the waiter rides out its lost reply")
		case <-time.After(20 * time.Second):
			t.Fatal("the waiter still waits 20 s after the release")
		}
		assert.Equal(t, map[string]string{c.ID() + ":" + ownerID(t, ctx): "1"}, redistest.HGetAll(t, direct, name),
			"held once: the hold the lost attempt took was released before the next attempt")
		require.NoError(t, l.Unlock(ctx))
		assert.False(t, redistest.Exists(t, direct, name), "free after one release")
	})

	t.Run("spin acquire while waiting", func(t *testing.T) {
		name := redistest.Name(t)
		holder := rlocktest.NewClient(t, direct, rlock.Options{})
		hctx := ownerCtx(t, 30*time.Second)
		require.NoError(t, holder.NewLock(name).Lock(hctx))
		l := c.NewSpinLock(name, rlock.SpinBackoff{})
		done := make(chan error, 1)
		go func() { done <- l.Lock(ctx) }()
		runs := redistest.Calls(t, direct, "pttl") // a failed attempt reads the holder's TTL
		require.True(t, redistest.Poll(10*time.Second, time.Millisecond, func() bool {
			return redistest.Calls(t, direct, "pttl") > runs
		}), "the spin waiter tried")
		p.CutAfterRequest(lua.Acquire.SHA1())
		require.True(t, redistest.Poll(10*time.Second, time.Millisecond, func() bool {
			return redistest.Calls(t, direct, "pttl") > runs+3
		}), "the spin waiter goes on trying after the cut")
		require.NoError(t, holder.NewLock(name).Unlock(hctx))
		select {
		case err := <-done:
			require.NoError(t, err, "the spin waiter rides out its lost reply")
		case <-time.After(20 * time.Second):
			t.Fatal("the spin waiter still waits 20 s after the release")
		}
		assert.Equal(t, map[string]string{c.ID() + ":" + ownerID(t, ctx): "1"}, redistest.HGetAll(t, direct, name))
		require.NoError(t, l.Unlock(ctx))
		assert.False(t, redistest.Exists(t, direct, name))
	})

	t.Run("permit acquire while waiting", func(t *testing.T) {
		name := redistest.Name(t)
		s := c.NewExpirableSemaphore(name)
		_, err := s.TrySetPermits(ctx, 0)
		require.NoError(t, err)
		type result struct {
			ids []string
			err error
		}
		done := make(chan result, 1)
		go func() {
			ids, err := s.Acquire(ctx, 1, time.Minute)
			done <- result{ids, err}
		}()
		require.True(t, redistest.Poll(10*time.Second, time.Millisecond, func() bool {
			return redistest.NumSub(t, direct, "redisson_sc:{"+name+"}") > 0
		}), "the waiter subscribed")
		p.CutAfterRequest(lua.PermitsAcquire.SHA1())
		// The permit comes from a client of its own, off the proxy: on the proxied
		// connection, the cut could fall before AddPermits' reply is read.
		adder := rlocktest.NewClient(t, direct, rlock.Options{}).NewExpirableSemaphore(name)
		require.NoError(t, adder.AddPermits(ctx, 1))
		var r result
		select {
		case r = <-done:
			require.NoError(t, r.err, "the waiter rides out its lost reply")
		case <-time.After(20 * time.Second):
			t.Fatal("the waiter still waits 20 s after a permit was added")
		}
		acquired, err := s.AcquiredPermits(ctx)
		require.NoError(t, err)
		assert.Equal(t, int64(1), acquired, "one permit taken: the one the lost attempt took was given back")
		require.NoError(t, s.Release(ctx, r.ids...))
		available, err := s.AvailablePermits(ctx)
		require.NoError(t, err)
		assert.Equal(t, int64(1), available)
	})
}

// F8: 700 ± 300 ms latency on every chunk, then a blackhole longer than the lease.
func TestF8LatencyAndBlackhole(t *testing.T) {
	srv := redistest.Shared(t)
	direct := srv.Client(t)
	p, rc := proxied(t, srv.Addr)
	name := redistest.Name(t)
	l := rlocktest.NewClient(t, rc, rlock.Options{WatchdogTimeout: 1500 * time.Millisecond}).NewLock(name)
	ld := rlocktest.NewClient(t, direct, rlock.Options{}).NewLock(name)
	holder, slow := ownerCtx(t, time.Minute), ownerCtx(t, time.Minute)

	t.Run("latency", func(t *testing.T) {
		require.NoError(t, ld.Lock(holder))
		p.SetDelay(400*time.Millisecond, func() time.Duration { return time.Duration(rand.IntN(600)) * time.Millisecond })
		defer p.SetDelay(0, nil)
		start := time.Now()
		assert.ErrorIs(t, l.TryLock(slow, 2*time.Second, 0), rlock.ErrLocked)
		took := time.Since(start)
		t.Logf("TryLock(2s) through 700±300 ms latency returned after %v", took)
		assert.GreaterOrEqual(t, took, 2*time.Second)
		assert.Less(t, took, 2*time.Second+2500*time.Millisecond, "at most the wait plus one slow round trip")
		require.NoError(t, ld.Unlock(holder))
	})

	t.Run("blackhole", func(t *testing.T) {
		require.NoError(t, l.Lock(slow))
		work := rlocktest.Held(t, l, slow)
		p.Blackhole()
		select {
		case <-work.Done():
		case <-time.After(15 * time.Second):
			t.Fatal("no loss signalled under a blackhole longer than the lease")
		}
		assert.ErrorIs(t, context.Cause(work), rlock.ErrLeaseExpired)
		require.NoError(t, ld.Lock(holder), "another client gets the lock once the lease ran out")
		p.Restore()
		assert.ErrorIs(t, l.Unlock(slow), rlock.ErrNotHeld)
		require.NoError(t, ld.Unlock(holder))
	})
}

// F13: CLIENT PAUSE WRITE. An acquire whose deadline passes during the pause returns its
// ctx error one round trip after the server runs it (when the pause ends), the hold its
// script took then is given back at once rather than left to its lease, and a waiter
// acquires after the pause.
func TestF13ClientPause(t *testing.T) {
	srv := redistest.Start(t)
	rc := srv.Client(t)
	name := redistest.Name(t)
	l := rlocktest.NewClient(t, srv.Client(t), rlock.Options{}).NewLock(name)
	const pause = 1500 * time.Millisecond
	published := redistest.Calls(t, rc, "publish")
	require.NoError(t, rc.Do(context.Background(), rc.B().ClientPause().Timeout(pause.Milliseconds()).Write().Build()).Error())
	short, cancel := context.WithTimeout(rlock.NewOwner(context.Background()), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	assert.ErrorIs(t, l.Lock(short), context.DeadlineExceeded)
	took := time.Since(start)
	t.Logf("an acquire in flight during a %v pause returned after %v (deadline 300ms)", pause, took)
	assert.Less(t, took, pause+time.Second, "one round trip after the pause, not ReleaseTimeout (5 s)")
	waiter := ownerCtx(t, 30*time.Second)
	start = time.Now()
	require.NoError(t, l.Lock(waiter), "acquires once the pause ends")
	assert.Less(t, time.Since(start), 5*time.Second, "the abandoned hold was given back, not left to its 30 s lease")
	require.NoError(t, l.Unlock(waiter))
	assert.Equal(t, int64(2), redistest.Calls(t, rc, "publish")-published,
		"two releases published: the give-back of the abandoned hold, and the waiter's")
	assert.False(t, redistest.Exists(t, rc, name))
}

// latches returns the unlock latches of name.
func latches(t *testing.T, rc rueidis.Client, name string) []string {
	t.Helper()
	ks, err := rc.Do(context.Background(), rc.B().Keys().Pattern("redisson_unlock_latch:{"+name+"}:*").Build()).AsStrSlice()
	require.NoError(t, err)
	return ks
}

// ownerID returns the owner ctx carries, as it appears in hash fields.
func ownerID(t *testing.T, ctx context.Context) string {
	t.Helper()
	o, ok := rlock.OwnerFrom(ctx)
	require.True(t, ok)
	return o.String()
}

// proxied starts a fault proxy in front of addr, closed in t.Cleanup, and returns it with a
// rueidis client that connects through it.
func proxied(t *testing.T, addr string) (*faultproxy.Proxy, rueidis.Client) {
	p, err := faultproxy.Start(addr)
	require.NoError(t, err)
	t.Cleanup(func() { p.Close() })
	rc, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{p.Addr}})
	require.NoError(t, err)
	t.Cleanup(rc.Close)
	return p, rc
}

// ownerCtx returns a new owner on a context bounded by d and by the test.
func ownerCtx(t *testing.T, d time.Duration) context.Context {
	return rlock.NewOwner(redistest.Context(t, d))
}
