package integration

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/require"

	"github.com/goredisson/goredisson/integration/javapeer"
	"github.com/goredisson/goredisson/internal/redistest"
	"github.com/goredisson/goredisson/rlock"
)

// forEachVersion runs f as one subtest per Redisson version (javapeer.KnownVersions), one
// after the other: the scenarios assert latencies, so two JVMs must not compete for the
// two cores of the test machines.
func forEachVersion(t *testing.T, f func(t *testing.T, version string)) {
	for _, v := range javapeer.KnownVersions {
		t.Run("redisson"+v, func(t *testing.T) { f(t, v) })
	}
}

// env is one subtest's world: a fresh Redis server, a Java Redisson peer and a Go rlock
// client on it, and a raw rueidis client to observe Redis.
type env struct {
	t      *testing.T
	ctx    context.Context // bounds everything the subtest does
	srv    *redistest.Server
	rc     rueidis.Client // raw observer, never used to take locks
	peer   *javapeer.Peer
	javaID string // Redisson client id: Java hash fields are "<javaID>:<threadid>"
	goc    *rlock.Client

	mu   sync.Mutex
	tids map[string]string // Java owner → thread id
}

// newEnv starts the world of one subtest. watchdog is the lock watchdog timeout of both the
// Java peer and the Go client; zero keeps both defaults (30 s).
func newEnv(t *testing.T, version string, watchdog time.Duration) *env {
	t.Helper()
	jar := javapeer.JarPath(t, version)
	srv := redistest.Start(t)
	var opts []javapeer.Option
	if watchdog > 0 {
		opts = append(opts, javapeer.WithWatchdog(watchdog))
	}
	peer := javapeer.Start(t, jar, "redis://"+srv.Addr, opts...)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	t.Cleanup(cancel)
	e := &env{t: t, ctx: ctx, srv: srv, rc: srv.Client(t), peer: peer, tids: map[string]string{}}
	var err error
	// Cleanups run last-in first-out: the rlock client closes before its rueidis client.
	e.goc, err = rlock.New(ctx, srv.Client(t), rlock.Options{WatchdogTimeout: watchdog})
	require.NoError(t, err)
	t.Cleanup(e.goc.Close)
	e.javaID, err = peer.ClientID(ctx)
	require.NoError(t, err)
	t.Logf("Redisson %s (JVM ready in %v), Redis %s %s, watchdog %v",
		peer.Must(t, ctx, "", "version"), peer.StartupTime(), srv.Mode(), srv.Addr, watchdogOrDefault(watchdog))
	return e
}

// in returns e for subtest t: the same server, peer and clients, failing t.
func (e *env) in(t *testing.T) *env {
	return &env{t: t, ctx: e.ctx, srv: e.srv, rc: e.rc, peer: e.peer, javaID: e.javaID, goc: e.goc, tids: map[string]string{}}
}

func watchdogOrDefault(d time.Duration) time.Duration {
	if d == 0 {
		return rlock.DefaultWatchdogTimeout
	}
	return d
}

// lock returns the Go handle of the lock called name.
func (e *env) lock(name string) *rlock.Lock {
	e.t.Helper()
	l := e.goc.NewLock(name)
	return l
}

// goSide returns a Go participant: a new owner of the Go client on lock name.
func (e *env) goSide(name string) *goSide {
	return &goSide{e: e, l: e.lock(name), ctx: rlock.NewOwner(e.ctx)}
}

// javaSide returns a Java participant: the peer thread owner on lock name.
func (e *env) javaSide(owner, name string) *javaSide {
	return &javaSide{e: e, owner: owner, name: name}
}

// javaField returns the hash field a Java owner writes: "<clientid>:<threadid>". Call it
// from the test's goroutine.
func (e *env) javaField(owner string) string {
	e.t.Helper()
	e.mu.Lock()
	defer e.mu.Unlock()
	tid, ok := e.tids[owner]
	if !ok {
		tid = e.peer.Must(e.t, e.ctx, owner, "threadid")
		e.tids[owner] = tid
	}
	return e.javaID + ":" + tid
}

// goField returns the hash field the owner carried by ctx writes: "<client-id>:<owner>".
func (e *env) goField(ctx context.Context) string {
	o, ok := rlock.OwnerFrom(ctx)
	if !ok {
		panic("goField: ctx carries no owner")
	}
	return e.goc.ID() + ":" + o.String()
}

// hgetall returns the lock's hash as Redis has it.
func (e *env) hgetall(name string) map[string]string {
	e.t.Helper()
	return redistest.HGetAll(e.t, e.rc, name)
}

// pttl returns PTTL of key (-2 missing, -1 no TTL).
func (e *env) pttl(key string) int64 {
	e.t.Helper()
	return redistest.PTTL(e.t, e.rc, key)
}

// failedTries returns how many acquire attempts found the lock taken, on this server so
// far: both Go's and Java's acquire scripts end in PTTL exactly when they fail, commands
// run by scripts count in INFO commandstats, and neither side's renewal or release script
// calls PTTL. The tests make no PTTL call of their own while they read it.
func (e *env) failedTries() (int64, error) { return pttlCalls(e.ctx, e.rc) }

// pttlCalls returns the PTTL calls on the server or node behind nc (0 before the first):
// the failed acquire attempts there, see failedTries.
func pttlCalls(ctx context.Context, nc rueidis.Client) (int64, error) {
	return redistest.CommandCalls(ctx, nc, "pttl")
}

// mustFailedTries is failedTries for the test's goroutine.
func (e *env) mustFailedTries() int64 {
	e.t.Helper()
	n, err := e.failedTries()
	require.NoError(e.t, err)
	return n
}

// awaitWaiting waits until one waiter that started after failedTries returned base is
// asleep on lock name: subscribed to its channel, and past the acquire attempt it makes
// after subscribing (both Redisson and rlock try, subscribe, try again, then wait). From
// then on a release message is what wakes it; without one it would sleep for the holder's
// whole remaining TTL.
func (e *env) awaitWaiting(name string, base int64) {
	e.t.Helper()
	var subs, tries int64
	ok := redistest.Poll(10*time.Second, time.Millisecond, func() bool {
		var err error
		subs = redistest.NumSub(e.t, e.rc, lockChannelOf(name))
		tries, err = e.failedTries()
		return err == nil && subs >= 1 && tries >= base+2
	})
	require.True(e.t, ok, "waiter on %s not asleep after 10s: %d subscribers, %d failed tries since it started",
		name, subs, tries-base)
}

// startAsleep starts waiter on lock name, which another side holds, and returns once the
// waiter is asleep on it (awaitWaiting).
func (e *env) startAsleep(waiter side, name string) <-chan acquired {
	e.t.Helper()
	base := e.mustFailedTries()
	got := waiter.Start()
	e.awaitWaiting(name, base)
	return got
}

// acquired is the outcome of a lock call run in the background.
type acquired struct {
	at    time.Time     // when the call returned, on the test's clock
	err   error         // nil: acquired
	inJVM time.Duration // Java: the time the call took inside the JVM
}

// await returns the outcome from ch, failing the test if it is an error or does not come
// within d.
func await(t *testing.T, ch <-chan acquired, d time.Duration, what string) acquired {
	t.Helper()
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case a := <-ch:
		require.NoError(t, a.err, what)
		return a
	case <-timer.C:
		t.Fatalf("%s: not acquired within %v", what, d)
		return acquired{}
	}
}

// side is one participant, a Go owner or a Java owner, on one lock.
type side interface {
	fmt.Stringer
	// Lock takes the lock with the watchdog, failing the test unless it gets it.
	Lock(t *testing.T)
	// LockFor takes the lock with an explicit lease, failing the test unless it gets it.
	LockFor(t *testing.T, lease time.Duration)
	// Start takes the lock with the watchdog in the background, blocking as long as needed.
	Start() <-chan acquired
	// TryNow makes one attempt without waiting (watchdog lease).
	TryNow(t *testing.T) bool
	// Unlock releases one hold; a failure is returned, not reported.
	Unlock() error
	// ForceUnlock deletes the lock whoever holds it.
	ForceUnlock(t *testing.T)
	// HoldCount is the participant's hold count.
	HoldCount(t *testing.T) int64
	// Field is the hash field the participant writes.
	Field(t *testing.T) string
	// RequireNotHeld fails the test unless err is this side's "not held by you" error.
	RequireNotHeld(t *testing.T, err error)
}

type goSide struct {
	e   *env
	l   *rlock.Lock
	ctx context.Context // carries the owner
}

func (g *goSide) String() string { return "go" }

func (g *goSide) Lock(t *testing.T) {
	t.Helper()
	require.NoError(t, g.l.Lock(g.ctx))
}

func (g *goSide) LockFor(t *testing.T, lease time.Duration) {
	t.Helper()
	require.NoError(t, g.l.LockFor(g.ctx, lease))
}

func (g *goSide) Start() <-chan acquired {
	ch := make(chan acquired, 1)
	go func() {
		err := g.l.Lock(g.ctx)
		ch <- acquired{at: time.Now(), err: err}
	}()
	return ch
}

func (g *goSide) TryNow(t *testing.T) bool {
	t.Helper()
	err := g.l.TryLock(g.ctx, 0, 0)
	if errors.Is(err, rlock.ErrLocked) {
		return false
	}
	require.NoError(t, err)
	return true
}

func (g *goSide) Unlock() error { return g.l.Unlock(g.ctx) }

func (g *goSide) ForceUnlock(t *testing.T) {
	t.Helper()
	existed, err := g.l.ForceUnlock(g.e.ctx)
	require.NoError(t, err)
	require.True(t, existed, "Go ForceUnlock: the lock did not exist")
}

func (g *goSide) HoldCount(t *testing.T) int64 {
	t.Helper()
	n, err := g.l.HoldCount(g.ctx)
	require.NoError(t, err)
	return int64(n)
}

func (g *goSide) Field(*testing.T) string { return g.e.goField(g.ctx) }

func (g *goSide) RequireNotHeld(t *testing.T, err error) {
	t.Helper()
	require.ErrorIs(t, err, rlock.ErrNotHeld)
}

type javaSide struct {
	e     *env
	owner string // peer owner = one Java thread
	name  string
}

func (j *javaSide) String() string { return "java" }

func (j *javaSide) Lock(t *testing.T) {
	t.Helper()
	require.Equal(t, "true", j.e.peer.Must(t, j.e.ctx, j.owner, "lock", j.name))
}

func (j *javaSide) LockFor(t *testing.T, lease time.Duration) {
	t.Helper()
	require.Equal(t, "true", j.e.peer.Must(t, j.e.ctx, j.owner, "lock", j.name, ms(lease)))
}

func (j *javaSide) Start() <-chan acquired {
	ch := make(chan acquired, 1)
	go func() {
		r, err := j.e.peer.Do(j.e.ctx, j.owner, "lock", j.name)
		a := acquired{at: time.Now(), err: err, inJVM: r.Elapsed}
		if err == nil && !r.Bool() {
			a.err = fmt.Errorf("java lock %s: %v", j.name, r)
		}
		ch <- a
	}()
	return ch
}

func (j *javaSide) TryNow(t *testing.T) bool {
	t.Helper()
	return j.e.peer.Must(t, j.e.ctx, j.owner, "trylock", j.name, "0", "-1") == "true"
}

// javaError is a Java exception returned by the peer.
type javaError struct{ r javapeer.Reply }

func (e *javaError) Error() string { return "java: " + e.r.Err }

func (j *javaSide) Unlock() error {
	r, err := j.e.peer.Do(j.e.ctx, j.owner, "unlock", j.name)
	if err != nil {
		return err
	}
	if !r.OK {
		return &javaError{r}
	}
	return nil
}

func (j *javaSide) ForceUnlock(t *testing.T) {
	t.Helper()
	require.Equal(t, "true", j.e.peer.Must(t, j.e.ctx, j.owner, "forceunlock", j.name),
		"Java forceUnlock: the lock did not exist")
}

func (j *javaSide) HoldCount(t *testing.T) int64 {
	t.Helper()
	n, err := strconv.ParseInt(j.e.peer.Must(t, j.e.ctx, j.owner, "holdcount", j.name), 10, 64)
	require.NoError(t, err)
	return n
}

func (j *javaSide) Field(*testing.T) string { return j.e.javaField(j.owner) }

func (j *javaSide) RequireNotHeld(t *testing.T, err error) {
	t.Helper()
	var je *javaError
	require.ErrorAs(t, err, &je)
	require.Equal(t, "java.lang.IllegalMonitorStateException", je.r.ErrClass, je.r.Err)
}

// ms formats d as the peer's millisecond argument.
func ms(d time.Duration) string { return strconv.FormatInt(d.Milliseconds(), 10) }
