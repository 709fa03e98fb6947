package integration

// The interop scenarios that run both on one Redis server (interop_test.go) and on a Redis
// Cluster (cluster_interop_test.go): their sides, and the bodies of scenarios 2, 3 and 4 on
// one lock name, written once against a stage that says how to wait for a waiter to be
// asleep on the lock and where to record measurements.

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/goredisson/goredisson/rlock"
)

// wakeBound is how soon a waiter must get the lock after a release it is woken for. The
// holders use the 30 s default watchdog, so a waiter that missed the release message would
// only retry when its ~30 s TTL sleep ends.
const wakeBound = 2 * time.Second

// pair is a holder and a waiter on opposite sides.
type pair struct {
	holder, waiter func(e *env, name string) side
}

// forceCase is a holder, a side that force-unlocks it and a waiter, for scenario 3.
type forceCase struct {
	holder, forcer, waiter func(e *env, name string) side
}

var (
	goOwner    = func(e *env, name string) side { return e.goSide(name) }
	javaOwnerA = func(e *env, name string) side { return e.javaSide("A", name) }
	javaOwnerB = func(e *env, name string) side { return e.javaSide("B", name) }
	javaOwnerC = func(e *env, name string) side { return e.javaSide("C", name) }
	crossSides = []pair{
		{holder: javaOwnerA, waiter: goOwner}, // java→go
		{holder: goOwner, waiter: javaOwnerB}, // go→java
	}
	// forceCases: a force-unlock from either side, whichever side holds, with the waiter on
	// the side other than the forcer's.
	forceCases = []forceCase{
		{holder: javaOwnerA, forcer: javaOwnerC, waiter: goOwner},
		{holder: goOwner, forcer: javaOwnerC, waiter: goOwner},
		{holder: goOwner, forcer: goOwner, waiter: javaOwnerB},
		{holder: javaOwnerA, forcer: goOwner, waiter: javaOwnerB},
	}
)

// stage is where the shared scenarios run: a single server (serverStage) or a cluster
// (clusterEnv.stage).
type stage struct {
	e       *env
	version string // Redisson version, for the logs
	// startAsleep starts waiter on lock name, which another side holds, and returns once the
	// waiter is asleep on the lock's channel, with a note on its subscription for the log
	// ("" for none). what names the case in failure messages.
	startAsleep func(t *testing.T, waiter side, name, what string) (<-chan acquired, string)
	// record adds a line to the run's summary; nil: there is none.
	record func(format string, args ...any)
}

// serverStage is the stage of e's single Redis server.
func serverStage(e *env, version string) stage {
	return stage{e: e, version: version,
		startAsleep: func(_ *testing.T, waiter side, name, _ string) (<-chan acquired, string) {
			return e.startAsleep(waiter, name), ""
		}}
}

// onServer runs a shared scenario once per Redisson version on a fresh single server (30 s
// watchdog), once for each case, case i on lock name prefix<i>.
func onServer[C any](t *testing.T, prefix string, cases []C, run func(stage, *testing.T, string, C)) {
	forEachVersion(t, func(t *testing.T, v string) {
		s := serverStage(newEnv(t, v, 0), v)
		for i, c := range cases {
			run(s, t, fmt.Sprintf("%s%d", prefix, i), c)
		}
	})
}

// onClusterNames runs a shared scenario on cluster env c for each of its two names for
// scenario (clusterEnv.names), each name once for every case.
func onClusterNames[C any](t *testing.T, c *clusterEnv, scenario string, cases []C, run func(stage, *testing.T, string, C)) {
	s := c.stage(t)
	for _, name := range c.names(t, scenario) {
		for _, cs := range cases {
			run(s, t, name, cs)
		}
	}
}

func (s stage) note(format string, args ...any) {
	if s.record != nil {
		s.record(format, args...)
	}
}

func jvmNote(a acquired) string {
	if a.inJVM == 0 {
		return ""
	}
	return fmt.Sprintf(", %v blocked in Java lock()", a.inJVM)
}

// unlockWakesWaiter is interop scenario 2 on lock name for one pair: the waiter, asleep on
// the lock, is woken by the holder's unlock within wakeBound, long before the holder's 30 s
// watchdog TTL, and then holds the lock with a fresh watchdog lease.
func (s stage) unlockWakesWaiter(t *testing.T, name string, p pair) {
	e := s.e
	holder, waiter := p.holder(e, name), p.waiter(e, name)
	what := fmt.Sprintf("%s→%s on %q", holder, waiter, name)
	holder.Lock(t)
	got, sub := s.startAsleep(t, waiter, name, what)
	// The latency runs from just before the unlock request to the waiter's return, so it
	// includes the peer's line protocol on the Java side.
	released := time.Now()
	require.NoError(t, holder.Unlock())
	a := await(t, got, 10*time.Second, what)
	latency := a.at.Sub(released)
	t.Logf("handoff %s: %v (Redisson %s%s)%s", what, latency, s.version, sub, jvmNote(a))
	s.note("unlock handoff %s: %v", what, latency.Round(10*time.Microsecond))
	assert.Less(t, latency, wakeBound, "%s: waiter not woken by the release message", what)
	assert.Equal(t, map[string]string{waiter.Field(t): "1"}, e.hgetall(name), what)
	assert.InDelta(t, rlock.DefaultWatchdogTimeout.Milliseconds(), e.pttl(name), 2000, "%s: new holder's watchdog lease", what)
	require.NoError(t, waiter.Unlock())
	assert.Empty(t, e.hgetall(name), what)
}

// forceUnlockWakesWaiter is interop scenario 3 on lock name for one case: the forcer's
// force-unlock wakes the waiter within wakeBound; the evicted holder's unlock then fails and
// leaves the new holder alone.
func (s stage) forceUnlockWakesWaiter(t *testing.T, name string, c forceCase) {
	e := s.e
	holder, forcer, waiter := c.holder(e, name), c.forcer(e, name), c.waiter(e, name)
	what := fmt.Sprintf("%s holder, %s force-unlock, %s waiter on %q", holder, forcer, waiter, name)
	holder.Lock(t)
	got, _ := s.startAsleep(t, waiter, name, what)
	forced := time.Now()
	forcer.ForceUnlock(t)
	a := await(t, got, 10*time.Second, what)
	latency := a.at.Sub(forced)
	t.Logf("%s: woken after %v (Redisson %s)%s", what, latency, s.version, jvmNote(a))
	s.note("force-unlock, %s: %v", what, latency.Round(10*time.Microsecond))
	assert.Less(t, latency, wakeBound, "%s: waiter not woken by the force-unlock message", what)
	assert.Equal(t, map[string]string{waiter.Field(t): "1"}, e.hgetall(name), what)
	holder.RequireNotHeld(t, holder.Unlock())
	assert.Equal(t, map[string]string{waiter.Field(t): "1"}, e.hgetall(name),
		"%s: the evicted holder's unlock touched the new holder", what)
	require.NoError(t, waiter.Unlock())
	assert.Empty(t, e.hgetall(name), what)
}

// reentrancyPerOwner is interop scenario 4 on lock name for one pair: while the holder holds
// the lock twice, the other side cannot take it until both holds are released, and the
// other side's unlock fails (Java: IllegalMonitorStateException, Go: rlock.ErrNotHeld)
// without changing the lock.
func (s stage) reentrancyPerOwner(t *testing.T, name string, p pair) {
	e := s.e
	holder, other := p.holder(e, name), p.waiter(e, name)
	field := holder.Field(t)
	what := fmt.Sprintf("%s holds %q twice, %s tries", holder, name, other)

	holder.Lock(t)
	holder.Lock(t)
	assert.Equal(t, map[string]string{field: "2"}, e.hgetall(name), what)
	assert.Equal(t, int64(2), holder.HoldCount(t), what)
	assert.Zero(t, other.HoldCount(t), what)
	assert.False(t, other.TryNow(t), "%s: taken while held twice", what)

	other.RequireNotHeld(t, other.Unlock())
	assert.Equal(t, map[string]string{field: "2"}, e.hgetall(name), "%s: wrong-side unlock changed the lock", what)

	require.NoError(t, holder.Unlock())
	assert.Equal(t, map[string]string{field: "1"}, e.hgetall(name), what)
	assert.Equal(t, int64(1), holder.HoldCount(t), what)
	assert.False(t, other.TryNow(t), "%s: taken while still held once", what)

	other.RequireNotHeld(t, other.Unlock())
	assert.Equal(t, map[string]string{field: "1"}, e.hgetall(name), "%s: wrong-side unlock changed the lock", what)

	require.NoError(t, holder.Unlock())
	assert.Zero(t, holder.HoldCount(t), what)
	assert.True(t, other.TryNow(t), "%s: not free after the last unlock", what)
	assert.Equal(t, map[string]string{other.Field(t): "1"}, e.hgetall(name), what)

	holder.RequireNotHeld(t, holder.Unlock()) // the old holder, now the wrong side
	require.NoError(t, other.Unlock())
	assert.Empty(t, e.hgetall(name), what)
	t.Logf("%s: reentrancy per owner and wrong-side unlock failures as expected", what)
}
