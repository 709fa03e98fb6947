package integration

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/goredisson/goredisson/integration/javapeer"
	"github.com/goredisson/goredisson/rlock"
)

// javaToken runs a fenced-lock command of the peer that replies a token ("null": none).
func (e *env) javaToken(t *testing.T, owner, cmd, name string, args ...string) int64 {
	t.Helper()
	v := e.peer.Must(t, e.ctx, owner, cmd, append([]string{name}, args...)...)
	if v == "null" {
		return 0
	}
	n, err := strconv.ParseInt(v, 10, 64)
	require.NoError(t, err, "%s %s: %q", owner, cmd, v)
	return n
}

// TestInteropFencedTokens: Go's FencedLock and Redisson's RFencedLock on one name share
// the lock and its token counter. Acquisitions alternating between the sides, re-entries
// included, get strictly increasing tokens; a failed attempt on either side gets none; each
// side reads the other's latest token. Then 3 Go and 3 Java owners contend: every
// acquisition has its own token, with none skipped, and a counter incremented
// non-atomically under the lock is exact.
func TestInteropFencedTokens(t *testing.T) {
	forEachVersion(t, func(t *testing.T, v string) {
		javapeer.Need(t, v, javapeer.FencedLock)
		e := newEnv(t, v, 0)
		const name, counter = "interopF:lock", "interopF:counter"
		f := e.goc.NewFencedLock(name)
		g := rlock.NewOwner(e.ctx)
		var last int64
		next := func(who string, tok int64) {
			t.Helper()
			require.Greater(t, tok, last, "%s: token after %d", who, last)
			last = tok
		}
		for range 3 {
			tok, err := f.Lock(g)
			require.NoError(t, err)
			next("go", tok)
			tok, err = f.TryLock(g, 0, 0)
			require.NoError(t, err)
			next("go re-entry", tok)
			assert.Zero(t, e.javaToken(t, "J", "fenced.trylock", name), "Java's tryLock fails with no token")
			assert.Equal(t, last, e.javaToken(t, "J", "fenced.token", name), "Java reads Go's latest token")
			require.NoError(t, f.Unlock(g))
			require.NoError(t, f.Unlock(g))

			next("java", e.javaToken(t, "J", "fenced.lock", name))
			next("java re-entry", e.javaToken(t, "J", "fenced.trylock", name, "0", "-1"))
			_, err = f.TryLock(rlock.NewOwner(e.ctx), 0, 0)
			assert.ErrorIs(t, err, rlock.ErrLocked, "Go's TryLock fails with no token")
			tok, err = f.Token(g)
			require.NoError(t, err)
			assert.Equal(t, last, tok, "Go reads Java's latest token")
			e.peer.Must(t, e.ctx, "J", "fenced.unlock", name)
			e.peer.Must(t, e.ctx, "J", "fenced.unlock", name)
		}
		assert.Empty(t, e.hgetall(name))

		const owners, rounds = 3, 20
		start := last
		var mu sync.Mutex
		var tokens []int64
		e.contendCounter(t, "fenced", name, counter, owners, rounds, f.Lock, f.Unlock, func(tok int64) {
			mu.Lock()
			tokens = append(tokens, tok)
			mu.Unlock()
		})
		slices.Sort(tokens)
		want := make([]int64, 2*owners*rounds)
		for i := range want {
			want[i] = start + int64(i) + 1
		}
		assert.Equal(t, want, tokens, "one token per acquisition, none shared, none skipped")
		t.Logf("tokens %d..%d over %d alternating and %d contended acquisitions", 1, tokens[len(tokens)-1], start, len(tokens))
	})
}

// TestInteropNonReentrant: Go's NewNonReentrantLock and Redisson's getNonReentrantLock
// (4.4+, so Redisson 4.7.0 only) on one name. On each side, an owner that acquires again is
// refused at once (Java: IllegalMonitorStateException from lock() and tryLock(); Go:
// ErrReentry from Lock and TryLock) and keeps its single hold; the other side finds the lock
// held (Java tryLock false, Go ErrLocked), waits, and is woken by the holder's one Unlock.
func TestInteropNonReentrant(t *testing.T) {
	forEachVersion(t, func(t *testing.T, v string) {
		javapeer.Need(t, v, javapeer.NonReentrantLock)
		e := newEnv(t, v, 0)
		const name = "interopN:lock"
		l := e.goc.NewNonReentrantLock(name)
		g := rlock.NewOwner(e.ctx)
		javaField := e.javaField("J")

		e.handOff(t, "nonreentrant", name, l, g, func() {
			// Java holds: Java's re-acquisitions fail at once, and change nothing.
			for _, cmd := range [][]string{{"nonreentrant.lock", name}, {"nonreentrant.trylock", name}, {"nonreentrant.trylock", name, "1000", "-1"}} {
				r, err := e.peer.Do(e.ctx, "J", cmd[0], cmd[1:]...)
				require.NoError(t, err)
				assert.Equal(t, "java.lang.IllegalMonitorStateException", r.ErrClass, "%v: %s", cmd, r)
				assert.Less(t, r.Elapsed, 500*time.Millisecond, "%v did not wait", cmd)
			}
			assert.Equal(t, map[string]string{javaField: "1"}, e.hgetall(name))
		}, func() {
			// Go holds: Go's re-acquisitions fail at once, and change nothing.
			assert.ErrorIs(t, l.Lock(g), rlock.ErrReentry)
			assert.ErrorIs(t, l.TryLock(g, time.Second, 0), rlock.ErrReentry)
			assert.Equal(t, map[string]string{e.goField(g): "1"}, e.hgetall(name))
		})
		assert.Empty(t, e.hgetall(name))
	})
}

// TestInteropSpin: Go's NewSpinLock and Redisson's getSpinLock on one name exclude each
// other. A waiter on either side takes the lock after the other side's release by polling:
// neither side's release publishes anything. Then 3 Go and 3 Java owners × 20 rounds
// increment a counter non-atomically under the lock, and the count is exact.
func TestInteropSpin(t *testing.T) {
	forEachVersion(t, func(t *testing.T, v string) {
		e := newEnv(t, v, 0)
		const name, counter = "interopS:lock", "interopS:counter"
		msgs := e.srv.Listen(t, lockChannelOf(name))
		l := e.goc.NewSpinLock(name, rlock.SpinBackoff{})
		g := rlock.NewOwner(e.ctx)

		e.handOff(t, "spin", name, l, g, func() {}, func() {})
		require.NoError(t, e.rc.Do(e.ctx, e.rc.B().Publish().Channel(lockChannelOf(name)).Message("marker").Build()).Error())
		select {
		case m := <-msgs:
			assert.Equal(t, "marker", m, "no release published anything")
		case <-time.After(5 * time.Second):
			t.Fatal("the marker was not heard")
		}

		lock := func(ctx context.Context) (int64, error) { return 0, l.Lock(ctx) }
		e.contendCounter(t, "spin", name, counter, 3, 20, lock, l.Unlock, nil)
		assert.Empty(t, e.hgetall(name))
	})
}

// contendCounter runs owners Go owners (lock and unlock) and owners Java owners (the peer's
// TYPE.lock and TYPE.unlock) on lock name, rounds times each; each increments counter
// non-atomically under the lock, and the count must come out exact. onToken, when not nil,
// gets every token (lock's, and the Java replies).
func (e *env) contendCounter(t *testing.T, typ, name, counter string, owners, rounds int,
	lock func(context.Context) (int64, error), unlock func(context.Context) error, onToken func(int64)) {
	t.Helper()
	note := func(tok int64) {
		if onToken != nil {
			onToken(tok)
		}
	}
	var wg sync.WaitGroup
	for i := range owners {
		wg.Go(func() {
			ctx := rlock.NewOwner(e.ctx)
			for range rounds {
				tok, err := lock(ctx)
				if !assert.NoError(t, err) {
					return
				}
				note(tok)
				n, err := e.rc.Do(ctx, e.rc.B().Get().Key(counter).Build()).AsInt64()
				if err != nil {
					n = 0
				}
				assert.NoError(t, e.rc.Do(ctx, e.rc.B().Set().Key(counter).Value(strconv.FormatInt(n+1, 10)).Build()).Error())
				assert.NoError(t, unlock(ctx))
			}
		})
		wg.Go(func() {
			owner := fmt.Sprintf("J%s%d", typ, i)
			for range rounds {
				v := e.peer.Must(t, e.ctx, owner, typ+".lock", name)
				if onToken != nil {
					tok, err := strconv.ParseInt(v, 10, 64)
					assert.NoError(t, err)
					note(tok)
				}
				e.peer.Must(t, e.ctx, owner, "incr", counter)
				e.peer.Must(t, e.ctx, owner, typ+".unlock", name)
			}
		})
	}
	wg.Wait()
	n, err := e.rc.Do(e.ctx, e.rc.B().Get().Key(counter).Build()).AsInt64()
	require.NoError(t, err)
	assert.Equal(t, int64(2*owners*rounds), n, "no two critical sections overlapped")
}

// handOff checks that Go's l and the peer's TYPE lock on name exclude each other both ways,
// and that a waiter on either side gets the lock after the other side's release: the peer's
// owner J locks, whileJava runs, Go's TryLock fails, a Go waiter (owner g) gets the lock
// after J's unlock; then whileGo runs, Java's tryLock is false, and a Java waiter gets the
// lock after Go's Unlock, which J then releases.
func (e *env) handOff(t *testing.T, typ, name string, l *rlock.Lock, g context.Context, whileJava, whileGo func()) {
	t.Helper()
	e.peer.Must(t, e.ctx, "J", typ+".lock", name)
	whileJava()
	assert.ErrorIs(t, l.TryLock(g, 0, 0), rlock.ErrLocked)
	got := make(chan error, 1)
	go func() { got <- l.Lock(g) }()
	e.peer.Must(t, e.ctx, "J", typ+".unlock", name)
	select {
	case err := <-got:
		require.NoError(t, err, "the Go waiter takes the lock after Java's release")
	case <-time.After(10 * time.Second):
		t.Fatal("the Go waiter did not get the lock after Java's release")
	}

	whileGo()
	assert.Equal(t, "false", e.peer.Must(t, e.ctx, "J", typ+".trylock", name))
	waiter := make(chan javapeer.Reply, 1)
	go func() {
		r, _ := e.peer.Do(e.ctx, "J", typ+".lock", name)
		waiter <- r
	}()
	require.NoError(t, l.Unlock(g))
	select {
	case r := <-waiter:
		require.True(t, r.OK, "%s", r)
	case <-time.After(10 * time.Second):
		t.Fatal("the Java waiter did not get the lock after Go's release")
	}
	assert.Equal(t, map[string]string{e.javaField("J"): "1"}, e.hgetall(name))
	e.peer.Must(t, e.ctx, "J", typ+".unlock", name)
}
