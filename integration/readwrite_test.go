package integration

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

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

// awaitRWWaiting waits until n waiters are subscribed to read-write lock name's channel.
func (e *env) awaitRWWaiting(t *testing.T, name string, n int64) {
	t.Helper()
	ok := redistest.Poll(10*time.Second, time.Millisecond, func() bool {
		return redistest.NumSub(t, e.rc, rwChannelOf(name)) >= n
	})
	require.True(t, ok, "%d waiters not subscribed to %s after 10s", n, rwChannelOf(name))
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
		const wakeBound = 3 * time.Second // vs the 30 s lease a lost wake-up would wait out

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
			var waiters []<-chan acquired
			var owners []context.Context
			for range 3 {
				g := rlock.NewOwner(e.ctx)
				assert.ErrorIs(t, r.TryLock(g, 0, 0), rlock.ErrLocked, "a Java writer excludes Go readers")
				owners = append(owners, g)
				waiters = append(waiters, goAsync(func() error { return r.Lock(g) }))
			}
			e.awaitRWWaiting(t, name, 1)
			released := time.Now()
			e.peer.Must(t, e.ctx, "J", "write.unlock", name)
			for i, ch := range waiters {
				a := await(t, ch, 10*time.Second, "go reader")
				assert.Less(t, a.at.Sub(released), wakeBound, "Go reader %d woken by Java's write release", i)
			}
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
			j1, j2 := e.javaAsync("J1", "read.lock", name), e.javaAsync("J2", "read.lock", name)
			e.awaitRWWaiting(t, name, 1)
			released := time.Now()
			require.NoError(t, w.Unlock(g))
			for i, ch := range []<-chan acquired{j1, j2} {
				a := await(t, ch, 10*time.Second, "java reader")
				assert.Less(t, a.at.Sub(released), wakeBound, "Java reader %d woken by Go's write release", i)
			}
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
			jw := e.javaAsync("JW", "write.lock", name)
			e.awaitRWWaiting(t, name, 1)
			released := time.Now()
			require.NoError(t, r.Unlock(g))
			a := await(t, jw, 10*time.Second, "java writer")
			assert.Less(t, a.at.Sub(released), wakeBound, "Java's writer woken by Go's last read release")
			e.peer.Must(t, e.ctx, "JW", "write.unlock", name)

			// Java readers, a Go writer.
			e.peer.Must(t, e.ctx, "J", "read.lock", name)
			gw := goAsync(func() error { return w.Lock(g) })
			e.awaitRWWaiting(t, name, 1)
			released = time.Now()
			e.peer.Must(t, e.ctx, "J", "read.unlock", name)
			a = await(t, gw, 10*time.Second, "go writer")
			assert.Less(t, a.at.Sub(released), wakeBound, "Go's writer woken by Java's last read release")
			require.NoError(t, w.Unlock(g))
		})

		t.Run("downgrade", func(t *testing.T) {
			e := e.in(t)
			const name = "interopRW:downgrade"
			r, w := rw(name)
			g := rlock.NewOwner(e.ctx)
			require.NoError(t, w.Lock(g))
			require.NoError(t, r.Lock(g))
			jr := e.javaAsync("J", "read.lock", name)
			e.awaitRWWaiting(t, name, 1)
			released := time.Now()
			require.NoError(t, w.Unlock(g))
			a := await(t, jr, 10*time.Second, "java reader")
			assert.Less(t, a.at.Sub(released), wakeBound, "Go's downgrade wakes Java's reader")
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
