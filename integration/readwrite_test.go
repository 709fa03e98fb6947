package integration

import (
	"context"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/goredisson/goredisson/integration/javapeer"
	"github.com/goredisson/goredisson/internal/keys"
	"github.com/goredisson/goredisson/internal/redistest"
	"github.com/goredisson/goredisson/rlock"
)

// rwChannelOf is the channel of read-write lock name, as Redisson names it.
func rwChannelOf(name string) string { return keys.ReadWriteChannel(name) }

// rwTimeoutKey is the k-th timeout key of reader field on read-write lock name.
func rwTimeoutKey(name, field string, k int) string {
	return keys.ReadTimeoutPrefix(name, field) + ":" + strconv.Itoa(k)
}

// rwWakeBound bounds a wake-up by a release message; without the message a waiter sleeps
// out the holder's 30 s watchdog lease.
const rwWakeBound = 3 * time.Second

// wokenBy is wokenAfter on read-write lock name on the env's server; javaOwners are the
// peer's owners among the waiters.
func (e *env) wokenBy(t *testing.T, name, what string, start func() []<-chan acquired, release func(), javaOwners ...string) {
	t.Helper()
	subscribed := func() bool { return redistest.NumSub(t, e.rc, rwChannelOf(name)) >= 1 }
	wokenAfter(t, e.mustFailedTries, subscribed, javaParked(t, e.peer, javaOwners...), what, start, release)
}

// javaParked returns a check that each of the peer's owners is asleep in Redisson's wait
// for a lock: its thread (the peer names it "owner-<owner>") parked in the Semaphore of its
// lock entry, as a thread dump (jstack) shows it.
func javaParked(t *testing.T, peer *javapeer.Peer, owners ...string) func() bool {
	return func() bool {
		if len(owners) == 0 {
			return true
		}
		out, err := exec.Command("jstack", strconv.Itoa(peer.Pid())).Output()
		require.NoError(t, err, "jstack")
		for _, owner := range owners {
			parked := false
			for _, block := range strings.Split(string(out), "\n\n") {
				if strings.HasPrefix(block, `"owner-`+owner+`"`) {
					parked = strings.Contains(block, "WAITING (parking)") && strings.Contains(block, "java.util.concurrent.Semaphore")
				}
			}
			if !parked {
				return false
			}
		}
		return true
	}
}

// wokenAfter starts the waiters, waits until all are asleep — subscribed (subscribed reports
// it), past the acquire attempt each makes after subscribing (tries counts the failed
// attempts, two per waiter: see env.failedTries), and, for Java's, parked (parked reports
// it) — then runs release, and asserts that each waiter acquired within rwWakeBound of it.
// The parking matters for Java: a "1" that arrives while a Redisson waiter is between its
// attempt and its sleep wakes nobody (LockPubSub releases only the threads parked at that
// moment), and the waiter then sleeps out the holder's TTL. Go's waiters keep such a wake-up.
func wokenAfter(t *testing.T, tries func() int64, subscribed, parked func() bool, what string, start func() []<-chan acquired, release func()) {
	t.Helper()
	base := tries()
	waiters := start()
	asleep := redistest.Poll(20*time.Second, time.Millisecond, func() bool {
		return subscribed() && tries() >= base+2*int64(len(waiters)) && parked()
	})
	require.True(t, asleep, "%s: the waiters are not asleep after 20 s", what)
	released := time.Now()
	release()
	for i, ch := range waiters {
		a := await(t, ch, 10*time.Second, what)
		assert.Less(t, a.at.Sub(released), rwWakeBound, "%s %d: woken %v after the release", what, i, a.at.Sub(released))
	}
}

// waiting returns start functions for wokenBy.
func waiting(chs ...func() <-chan acquired) func() []<-chan acquired {
	return func() []<-chan acquired {
		out := make([]<-chan acquired, len(chs))
		for i, ch := range chs {
			out[i] = ch()
		}
		return out
	}
}

// javaAsync runs a peer command in the background and delivers when it returned true.
func (e *env) javaAsync(owner, cmd, name string) <-chan acquired {
	ch := make(chan acquired, 1)
	go func() {
		r, err := e.peer.Do(e.ctx, owner, cmd, name)
		a := acquired{at: time.Now(), err: err, inJVM: r.Elapsed}
		if err == nil && !r.Bool() {
			a.err = fmt.Errorf("java %s %s: %v", cmd, name, r)
		}
		ch <- a
	}()
	return ch
}

// javaWaiter is javaAsync, deferred for waiting.
func (e *env) javaWaiter(owner, cmd, name string) func() <-chan acquired {
	return func() <-chan acquired { return e.javaAsync(owner, cmd, name) }
}

// goWaiter is goAsync, deferred for waiting.
func goWaiter(acquire func() error) func() <-chan acquired {
	return func() <-chan acquired { return goAsync(acquire) }
}

// goAsync runs a Go acquire in the background.
func goAsync(acquire func() error) <-chan acquired {
	ch := make(chan acquired, 1)
	go func() {
		err := acquire()
		ch <- acquired{at: time.Now(), err: err}
	}()
	return ch
}

// TestInteropReadWrite: Go's NewReadWriteLock and Redisson's getReadWriteLock on one name
// are one lock. Each side's holds have the layout the other expects (the mode field, reader
// fields, ":write" writer fields, the readers' timeout keys); Java and Go readers hold it
// together; a writer of either side excludes the readers and the writer of the other; the
// releases of each side wake the other side's waiters well under the 30 s watchdog lease,
// both ways and for both messages ("1" from a write release, "0" from the last read
// release); and a reader of either side keeps the lock alive, through its timeout keys,
// when a reader of the other side leaves.
func TestInteropReadWrite(t *testing.T) {
	forEachVersion(t, func(t *testing.T, v string) {
		e := newEnv(t, v, 0)
		rw := func(name string) (r, w *rlock.Lock) {
			l := e.goc.NewReadWriteLock(name)
			return l.ReadLock(), l.WriteLock()
		}

		t.Run("layout and shared reads", func(t *testing.T) {
			e := e.in(t)
			const name = "interopRW:layout"
			r, w := rw(name)
			g := rlock.NewOwner(e.ctx)
			jf := e.javaField("J")
			e.peer.Must(t, e.ctx, "J", "read.lock", name)
			e.peer.Must(t, e.ctx, "J", "read.lock", name)
			assert.Equal(t, map[string]string{"mode": "read", jf: "2"}, e.hgetall(name))
			assert.Positive(t, e.pttl(rwTimeoutKey(name, jf, 2)), "Java's timeout keys are where Go looks")
			require.NoError(t, r.TryLock(g, 0, 0), "a Go reader shares Java's read")
			assert.Equal(t, map[string]string{"mode": "read", jf: "2", e.goField(g): "1"}, e.hgetall(name))
			assert.Positive(t, e.pttl(rwTimeoutKey(name, e.goField(g), 1)), "Go's timeout key is where Java looks")
			assert.Equal(t, "2", e.peer.Must(t, e.ctx, "J", "read.holdcount", name), "Java counts its reads")
			assert.ErrorIs(t, w.TryLock(rlock.NewOwner(e.ctx), 0, 0), rlock.ErrLocked)
			assert.Equal(t, "false", e.peer.Must(t, e.ctx, "J2", "write.trylock", name))
			assert.Equal(t, "true", e.peer.Must(t, e.ctx, "J2", "read.islocked", name))
			assert.Equal(t, "false", e.peer.Must(t, e.ctx, "J2", "write.islocked", name))
			e.peer.Must(t, e.ctx, "J", "read.unlock", name)
			e.peer.Must(t, e.ctx, "J", "read.unlock", name)
			require.NoError(t, r.Unlock(g))
			assert.Empty(t, e.hgetall(name))

			require.NoError(t, w.Lock(g))
			assert.Equal(t, map[string]string{"mode": "write", e.goField(g) + ":write": "1"}, e.hgetall(name))
			assert.Equal(t, "true", e.peer.Must(t, e.ctx, "J", "write.islocked", name))
			assert.Equal(t, "false", e.peer.Must(t, e.ctx, "J", "read.trylock", name))
			require.NoError(t, w.Unlock(g))
			e.peer.Must(t, e.ctx, "J", "write.lock", name)
			assert.Equal(t, map[string]string{"mode": "write", jf + ":write": "1"}, e.hgetall(name))
			held, err := w.IsLocked(e.ctx)
			require.NoError(t, err)
			assert.True(t, held)
			e.peer.Must(t, e.ctx, "J", "write.unlock", name)
		})

		t.Run("Java writer wakes Go readers", func(t *testing.T) {
			e := e.in(t)
			const name = "interopRW:java-writer"
			r, _ := rw(name)
			e.peer.Must(t, e.ctx, "J", "write.lock", name)
			var waiters []func() <-chan acquired
			var owners []context.Context
			for range 3 {
				g := rlock.NewOwner(e.ctx)
				assert.ErrorIs(t, r.TryLock(g, 0, 0), rlock.ErrLocked, "a Java writer excludes Go readers")
				owners = append(owners, g)
				waiters = append(waiters, func() <-chan acquired { return goAsync(func() error { return r.Lock(g) }) })
			}
			e.wokenBy(t, name, "Go reader woken by Java's write release", waiting(waiters...),
				func() { e.peer.Must(t, e.ctx, "J", "write.unlock", name) })
			assert.Len(t, e.hgetall(name), 4, "the three Go readers share it")
			for _, g := range owners {
				require.NoError(t, r.Unlock(g))
			}
		})

		t.Run("Go writer wakes Java readers", func(t *testing.T) {
			e := e.in(t)
			const name = "interopRW:go-writer"
			_, w := rw(name)
			g := rlock.NewOwner(e.ctx)
			require.NoError(t, w.Lock(g))
			assert.Equal(t, "false", e.peer.Must(t, e.ctx, "J1", "read.trylock", name), "a Go writer excludes Java readers")
			e.wokenBy(t, name, "Java reader woken by Go's write release",
				waiting(e.javaWaiter("J1", "read.lock", name), e.javaWaiter("J2", "read.lock", name)),
				func() { require.NoError(t, w.Unlock(g)) }, "J1", "J2")
			e.peer.Must(t, e.ctx, "J1", "read.unlock", name)
			e.peer.Must(t, e.ctx, "J2", "read.unlock", name)
			assert.Empty(t, e.hgetall(name))
		})

		t.Run("last reader wakes the other side's writer", func(t *testing.T) {
			e := e.in(t)
			const name = "interopRW:last-reader"
			r, w := rw(name)
			g := rlock.NewOwner(e.ctx)

			// Go readers, a Java writer.
			require.NoError(t, r.Lock(g))
			e.wokenBy(t, name, "Java's writer woken by Go's last read release", waiting(e.javaWaiter("JW", "write.lock", name)),
				func() { require.NoError(t, r.Unlock(g)) }, "JW")
			e.peer.Must(t, e.ctx, "JW", "write.unlock", name)

			// Java readers, a Go writer.
			e.peer.Must(t, e.ctx, "J", "read.lock", name)
			e.wokenBy(t, name, "Go's writer woken by Java's last read release", waiting(goWaiter(func() error { return w.Lock(g) })),
				func() { e.peer.Must(t, e.ctx, "J", "read.unlock", name) })
			require.NoError(t, w.Unlock(g))
		})

		t.Run("downgrade", func(t *testing.T) {
			e := e.in(t)
			const name = "interopRW:downgrade"
			r, w := rw(name)
			g := rlock.NewOwner(e.ctx)
			require.NoError(t, w.Lock(g))
			require.NoError(t, r.Lock(g))
			e.wokenBy(t, name, "Java's reader woken by Go's downgrade", waiting(e.javaWaiter("J", "read.lock", name)),
				func() { require.NoError(t, w.Unlock(g)) }, "J")
			e.peer.Must(t, e.ctx, "J", "read.unlock", name)
			require.NoError(t, r.Unlock(g))
			assert.Empty(t, e.hgetall(name))
		})

		t.Run("readers and writers of both sides", func(t *testing.T) {
			e := e.in(t)
			const name, counter = "interopRW:mixed", "interopRW:counter"
			r, w := rw(name)
			const owners, rounds = 3, 12
			var wg sync.WaitGroup
			var goWrites, javaWrites int
			var mu sync.Mutex
			for i := range owners {
				wg.Go(func() { // Go: writes increment the counter non-atomically; reads check it stays put
					ctx := rlock.NewOwner(e.ctx)
					for round := range rounds {
						if round%3 == i%3 {
							if !assert.NoError(t, w.Lock(ctx)) {
								return
							}
							n, _ := e.rc.Do(ctx, e.rc.B().Get().Key(counter).Build()).AsInt64()
							assert.NoError(t, e.rc.Do(ctx, e.rc.B().Set().Key(counter).Value(strconv.FormatInt(n+1, 10)).Build()).Error())
							assert.NoError(t, w.Unlock(ctx))
							mu.Lock()
							goWrites++
							mu.Unlock()
							continue
						}
						if !assert.NoError(t, r.Lock(ctx)) {
							return
						}
						before, _ := e.rc.Do(ctx, e.rc.B().Get().Key(counter).Build()).AsInt64()
						time.Sleep(2 * time.Millisecond) // a writer of either side would show here
						after, _ := e.rc.Do(ctx, e.rc.B().Get().Key(counter).Build()).AsInt64()
						assert.Equal(t, before, after, "a write overlapped a Go read")
						assert.NoError(t, r.Unlock(ctx))
					}
				})
				wg.Go(func() { // Java: writes increment the counter non-atomically (GET, sleep, SET)
					owner := fmt.Sprintf("JM%d", i)
					for round := range rounds {
						if round%3 == (i+1)%3 {
							e.peer.Must(t, e.ctx, owner, "write.lock", name)
							e.peer.Must(t, e.ctx, owner, "incr", counter, "2")
							e.peer.Must(t, e.ctx, owner, "write.unlock", name)
							mu.Lock()
							javaWrites++
							mu.Unlock()
							continue
						}
						e.peer.Must(t, e.ctx, owner, "read.lock", name)
						e.peer.Must(t, e.ctx, owner, "read.unlock", name)
					}
				})
			}
			wg.Wait()
			n, err := e.rc.Do(e.ctx, e.rc.B().Get().Key(counter).Build()).AsInt64()
			require.NoError(t, err)
			assert.Equal(t, int64(goWrites+javaWrites), n, "no two writes overlapped")
			assert.Empty(t, e.hgetall(name))
		})
	})
}

// TestInteropReadTimeoutKeys: with a 1 s watchdog on both sides, a reader of one side that
// holds for several leases keeps its timeout keys alive through its own client's renewal,
// so a reader of the other side that leaves does not delete the lock under it (Redisson's
// read release keeps the lock only while some reader's timeout key lives).
func TestInteropReadTimeoutKeys(t *testing.T) {
	forEachVersion(t, func(t *testing.T, v string) {
		const watchdog = time.Second
		e := newEnv(t, v, watchdog)
		const name = "interopRW:timeout-keys"
		r := e.goc.NewReadWriteLock(name).ReadLock()
		g := rlock.NewOwner(e.ctx)

		// A Go reader outlives several leases; a Java reader comes and goes.
		require.NoError(t, r.Lock(g))
		held, stop, err := r.Held(g)
		require.NoError(t, err)
		defer stop()
		e.peer.Must(t, e.ctx, "J", "read.lock", name)
		renewed := func(key string) bool { return e.pttl(key) > 0 }
		start := time.Now()
		require.True(t, redistest.Poll(20*time.Second, 50*time.Millisecond, func() bool {
			return time.Since(start) > 3*watchdog
		}))
		require.True(t, renewed(rwTimeoutKey(name, e.goField(g), 1)), "Go renews its timeout key")
		e.peer.Must(t, e.ctx, "J", "read.unlock", name)
		assert.Equal(t, map[string]string{"mode": "read", e.goField(g): "1"}, e.hgetall(name), "Java's release leaves Go's read")
		assert.NoError(t, held.Err())

		// A Java reader outlives several leases; the Go reader leaves.
		e.peer.Must(t, e.ctx, "J", "read.lock", name)
		start = time.Now()
		require.True(t, redistest.Poll(20*time.Second, 50*time.Millisecond, func() bool {
			return time.Since(start) > 3*watchdog
		}))
		jf := e.javaField("J")
		require.True(t, renewed(rwTimeoutKey(name, jf, 1)), "Java renews its timeout key")
		require.NoError(t, r.Unlock(g))
		assert.Equal(t, map[string]string{"mode": "read", jf: "1"}, e.hgetall(name), "Go's release leaves Java's read")
		assert.Equal(t, "true", e.peer.Must(t, e.ctx, "J", "read.isheld", name))
		e.peer.Must(t, e.ctx, "J", "read.unlock", name)
		assert.Empty(t, e.hgetall(name))
	})
}
