package faults

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/goredisson/goredisson/internal/redistest"
	"github.com/goredisson/goredisson/internal/redistest/rlocktest"
	"github.com/goredisson/goredisson/rlock"
)

// A restart of Redis without persistence while lock waiters wait: the holds are gone with
// the data, and every waiter, woken when its subscription is confirmed again, takes its lock
// on the new server. It does not return the error of a connection that went away with the
// old server (the waiter's first attempt after the wake often meets one), and a lost reply
// leaves no hold behind: after the waiter's release the lock is free.
func TestRestartWhileLocksWait(t *testing.T) {
	srv := redistest.Start(t)
	holderClient := rlocktest.NewClient(t, srv.Client(t), rlock.Options{})
	waiterClient := rlocktest.NewClient(t, srv.Client(t), rlock.Options{})
	name := redistest.Name(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	kinds := map[string]func(c *rlock.Client) *rlock.Lock{
		"lock":       func(c *rlock.Client) *rlock.Lock { return c.NewLock(name + ":lock") },
		"fair lock":  func(c *rlock.Client) *rlock.Lock { return c.NewFairLock(name + ":fair") },
		"write lock": func(c *rlock.Client) *rlock.Lock { return c.NewReadWriteLock(name + ":rw").WriteLock() },
	}
	readers := map[*rlock.Client]*rlock.ReadWriteLock{}
	for _, c := range []*rlock.Client{holderClient, waiterClient} {
		readers[c] = c.NewReadWriteLock(name + ":rw2")
	}
	type waiter struct {
		l     *rlock.Lock
		owner context.Context
		done  chan error
	}
	waiters := map[string]*waiter{}
	held := map[string]*rlock.Lock{"read lock": readers[holderClient].WriteLock()} // a writer excludes the reader
	for kind, newLock := range kinds {
		held[kind] = newLock(holderClient)
	}
	for kind, hl := range held {
		require.NoError(t, hl.LockFor(rlock.NewOwner(ctx), time.Minute), kind)
		wl := readers[waiterClient].ReadLock()
		if newLock, ok := kinds[kind]; ok {
			wl = newLock(waiterClient)
		}
		w := &waiter{l: wl, owner: rlock.NewOwner(ctx), done: make(chan error, 1)}
		waiters[kind] = w
		go func() { w.done <- w.l.Lock(w.owner) }()
	}
	rc := srv.Client(t)
	require.True(t, redistest.Poll(10*time.Second, time.Millisecond, func() bool {
		n := 0
		for _, ch := range []string{"redisson_lock__channel:{" + name + ":lock}", "redisson_rwlock:{" + name + ":rw}",
			"redisson_rwlock:{" + name + ":rw2}"} {
			if redistest.NumSub(t, rc, ch)+redistest.ShardNumSub(t, rc, ch) > 0 {
				n++
			}
		}
		return n == 3
	}), "the waiters subscribed")
	require.True(t, redistest.Poll(10*time.Second, time.Millisecond, func() bool {
		n, err := rc.Do(ctx, rc.B().Llen().Key("redisson_lock_queue:{"+name+":fair}").Build()).AsInt64()
		return err == nil && n == 1
	}), "the fair lock's waiter queued")

	srv.Restart(t)
	restarted := time.Now()
	for kind, w := range waiters {
		select {
		case err := <-w.done:
			require.NoError(t, err, "%s: the waiter's Lock after the restart", kind)
			t.Logf("%s: the waiter acquired %v after the restart", kind, time.Since(restarted).Round(time.Millisecond))
		case <-time.After(30 * time.Second):
			t.Fatalf("%s: the waiter still waits 30 s after the restart, on a server without the holder's hold", kind)
		}
		held, err := w.l.IsHeld(w.owner)
		require.NoError(t, err, kind)
		assert.True(t, held, "%s: the waiter holds its lock on the new server", kind)
		require.NoError(t, w.l.Unlock(w.owner), kind)
		locked, err := w.l.IsLocked(ctx)
		require.NoError(t, err, kind)
		assert.False(t, locked, "%s: free after the waiter's release (no hold left by a lost reply)", kind)
	}
}
