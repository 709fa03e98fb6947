package integration

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/goredisson/goredisson/rlock"
)

// TestInteropUnlockWakesWaiter is interop scenario 2: a Go waiter is woken by a Java unlock,
// and a Java waiter by a Go unlock, long before the holder's 30 s TTL would have run out.
func TestInteropUnlockWakesWaiter(t *testing.T) {
	onServer(t, "interop2:lock", crossSides, stage.unlockWakesWaiter)
}

// TestInteropForceUnlockWakesWaiter is interop scenario 3: a force-unlock from either side
// wakes the other side's waiter long before the holder's 30 s TTL, whichever side held the
// lock; the evicted holder's unlock then fails and leaves the new holder alone.
func TestInteropForceUnlockWakesWaiter(t *testing.T) {
	onServer(t, "interop3:lock", forceCases, stage.forceUnlockWakesWaiter)
}

// TestInteropReentrancyPerOwner is interop scenario 4: reentrancy counts per owner. While
// one side's owner holds the lock twice, the other side cannot take it until both holds are
// released, and the other side's unlock fails (Java: IllegalMonitorStateException, Go:
// rlock.ErrNotHeld) without changing the lock.
func TestInteropReentrancyPerOwner(t *testing.T) {
	onServer(t, "interop4:lock", crossSides, stage.reentrancyPerOwner)
}

// TestInteropWatchdogAndLease is interop scenario 5, with a 1.5 s watchdog on both sides:
//
//   - a watchdog hold on either side outlives 3 watchdog timeouts of work, and the other
//     side's waiter gets the lock only after the unlock;
//   - an explicit 1 s lease on either side expires on time: the other side's waiter gets the
//     lock within lease+500 ms, and not before lease-50 ms.
func TestInteropWatchdogAndLease(t *testing.T) {
	const watchdog = 1500 * time.Millisecond
	forEachVersion(t, func(t *testing.T, v string) {
		e := newEnv(t, v, watchdog)
		t.Run("watchdog", func(t *testing.T) {
			e := e.in(t)
			for i, p := range crossSides {
				name := fmt.Sprintf("interop5:watchdog%d", i)
				holder, waiter := p.holder(e, name), p.waiter(e, name)
				what := fmt.Sprintf("%s watchdog hold, %s waiter", holder, waiter)
				holder.Lock(t)
				field := holder.Field(t)
				got := e.startAsleep(waiter, name)

				// The work: 3 watchdog timeouts. Check every 100 ms that the holder still holds
				// with a live TTL and that the waiter is still waiting.
				work := 3 * watchdog
				minTTL := watchdog.Milliseconds()
				tick := time.NewTicker(100 * time.Millisecond)
				for begin := time.Now(); time.Since(begin) < work; {
					select {
					case a := <-got:
						tick.Stop()
						t.Fatalf("%s: waiter returned %v after %v of work, before the unlock", what, a.err, a.at.Sub(begin))
					case <-tick.C:
					}
					ttl := e.pttl(name)
					require.Equal(t, map[string]string{field: "1"}, e.hgetall(name), what)
					require.Positive(t, ttl, "%s: no TTL, or the lock expired", what)
					minTTL = min(minTTL, ttl)
				}
				tick.Stop()
				released := time.Now()
				require.NoError(t, holder.Unlock(), "%s: unlock after %v of work", what, work)
				a := await(t, got, 10*time.Second, what)
				t.Logf("%s: held for %v (lowest PTTL seen %d ms), waiter got it %v after the unlock%s",
					what, work, minTTL, a.at.Sub(released), jvmNote(a))
				require.True(t, a.at.After(released), what)
				assert.Less(t, a.at.Sub(released), wakeBound, what)
				assert.Equal(t, map[string]string{waiter.Field(t): "1"}, e.hgetall(name), what)
				require.NoError(t, waiter.Unlock())
			}
		})

		t.Run("lease", func(t *testing.T) {
			e := e.in(t)
			const lease = time.Second
			for i, p := range crossSides {
				name := fmt.Sprintf("interop5:lease%d", i)
				holder, waiter := p.holder(e, name), p.waiter(e, name)
				what := fmt.Sprintf("%s %v lease, %s waiter", holder, lease, waiter)
				before := time.Now() // the lease starts after this ...
				holder.LockFor(t, lease)
				after := time.Now() // ... and before this
				a := await(t, waiter.Start(), lease+10*time.Second, what)
				t.Logf("%s: waiter got it %v after the lock call began, %v after it returned%s",
					what, a.at.Sub(before), a.at.Sub(after), jvmNote(a))
				assert.GreaterOrEqual(t, a.at.Sub(before), lease-50*time.Millisecond, "%s: acquired before the lease ran out", what)
				assert.LessOrEqual(t, a.at.Sub(after), lease+500*time.Millisecond, "%s: lease did not expire on time", what)
				assert.Equal(t, map[string]string{waiter.Field(t): "1"}, e.hgetall(name), what)
				holder.RequireNotHeld(t, holder.Unlock())
				require.NoError(t, waiter.Unlock())
			}
		})
	})
}

// TestInteropHashReadBack is interop scenario 6: each side reads the hash the other wrote.
// Java's isLocked/isHeldByCurrentThread/getHoldCount/remainTimeToLive see a Go holder, and
// Go's IsLocked/IsHeld/HoldCount/RemainTTL/Held and raw HGETALL see a Java holder.
func TestInteropHashReadBack(t *testing.T) {
	forEachVersion(t, func(t *testing.T, v string) {
		e := newEnv(t, v, 0)
		ctx := e.ctx
		// javaTTL is Java's remainTimeToLive of name, in ms.
		javaTTL := func(t *testing.T, name string) int64 {
			n := e.peer.Must(t, ctx, "J", "ttl", name)
			var ms int64
			_, err := fmt.Sscan(n, &ms)
			require.NoError(t, err)
			return ms
		}

		// Go holds, Java reads: once with the watchdog lease (30 s), once with an explicit one.
		t.Run("Go holds, Java reads", func(t *testing.T) {
			e := e.in(t)
			const name = "interop6:go-holds"
			g := e.goSide(name)
			j := e.javaSide("J", name)
			for _, lease := range []time.Duration{0, 20 * time.Second} {
				what := fmt.Sprintf("Go holder, lease %v", lease)
				want := rlock.DefaultWatchdogTimeout
				if lease == 0 {
					g.Lock(t)
				} else {
					g.LockFor(t, lease)
					want = lease
				}
				assert.Equal(t, map[string]string{g.Field(t): "1"}, e.hgetall(name), what)
				assert.Equal(t, "true", e.peer.Must(t, ctx, "J", "islocked", name), what)
				assert.Equal(t, "false", e.peer.Must(t, ctx, "J", "isheld", name), what)
				assert.Zero(t, j.HoldCount(t), what)
				ttl := javaTTL(t, name)
				assert.LessOrEqual(t, ttl, want.Milliseconds(), what)
				assert.Greater(t, ttl, want.Milliseconds()-2000, what)
				goTTL, err := g.l.RemainTTL(ctx)
				require.NoError(t, err)
				assert.InDelta(t, ttl, goTTL.Milliseconds(), 1000, "%s: Go and Java TTLs disagree", what)
				t.Logf("%s: Java sees islocked true, isheld false, holdcount 0, ttl %d ms (Go RemainTTL %v)", what, ttl, goTTL)
				require.NoError(t, g.Unlock())
				assert.Equal(t, "false", e.peer.Must(t, ctx, "J", "islocked", name), what)
				assert.Equal(t, int64(-2), javaTTL(t, name), what)
			}
		})

		const name2 = "interop6:java-holds"
		t.Run("Java holds twice, Go reads", func(t *testing.T) {
			e := e.in(t)
			g2 := e.goSide(name2)
			jfield := e.javaField("J")
			e.peer.Must(t, ctx, "J", "lock", name2)
			e.peer.Must(t, ctx, "J", "lock", name2)
			hash := e.hgetall(name2)
			assert.Equal(t, map[string]string{jfield: "2"}, hash, "raw HGETALL of a Java holder")
			t.Logf("Java holder: HGETALL %s = %v", name2, hash)
			assert.Regexp(t, `^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}:[0-9]+$`, jfield)
			n, err := g2.l.HoldCount(g2.ctx)
			require.NoError(t, err)
			assert.Zero(t, n, "Go owner's HoldCount")
			locked, err := g2.l.IsLocked(ctx)
			require.NoError(t, err)
			assert.True(t, locked, "Go IsLocked")
			held, err := g2.l.IsHeld(g2.ctx)
			require.NoError(t, err)
			assert.False(t, held, "Go IsHeld")
			goTTL, err := g2.l.RemainTTL(ctx)
			require.NoError(t, err)
			assert.LessOrEqual(t, goTTL, rlock.DefaultWatchdogTimeout)
			assert.Greater(t, goTTL, rlock.DefaultWatchdogTimeout-2*time.Second, "Java's watchdog lease")
			_, _, err = g2.l.Held(g2.ctx)
			assert.ErrorIs(t, err, rlock.ErrNotHeld, "Go Held on a Java hold")
			assert.Equal(t, "2", e.peer.Must(t, ctx, "J", "holdcount", name2))
			t.Logf("Java holder: Go sees IsLocked true, IsHeld false, HoldCount 0, RemainTTL %v", goTTL)

			e.peer.Must(t, ctx, "J", "unlock", name2)
			assert.Equal(t, map[string]string{jfield: "1"}, e.hgetall(name2))
			e.peer.Must(t, ctx, "J", "unlock", name2)
			locked, err = g2.l.IsLocked(ctx)
			require.NoError(t, err)
			assert.False(t, locked, "Go IsLocked after Java's last unlock")
			_, err = g2.l.RemainTTL(ctx)
			assert.ErrorIs(t, err, rlock.ErrNotLocked, "Go RemainTTL after Java's last unlock")
		})

		t.Run("Java lease, Go reads", func(t *testing.T) {
			e := e.in(t)
			g2 := e.goSide(name2)
			const lease = 20 * time.Second
			e.peer.Must(t, ctx, "J", "lock", name2, ms(lease))
			goTTL, err := g2.l.RemainTTL(ctx)
			require.NoError(t, err)
			assert.LessOrEqual(t, goTTL, lease)
			assert.Greater(t, goTTL, lease-2*time.Second, "Java's explicit lease")
			e.peer.Must(t, ctx, "J", "unlock", name2)
		})
	})
}
