package integration

import (
	"context"
	"errors"
	"net"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/goredisson/goredisson/integration/javapeer"
	"github.com/goredisson/goredisson/internal/keys"
	"github.com/goredisson/goredisson/internal/redistest"
	"github.com/goredisson/goredisson/internal/redistest/rlocktest"
	"github.com/goredisson/goredisson/rlock"
)

// The ACL user of docs/SECURITY.md: the rules there grant lock names under "orders:".
const (
	aclUser     = "orders-svc"
	aclPassword = "orders-secret"
	aclPrefix   = "orders:"
)

// securityRules returns the acl blocks of docs/SECURITY.md: the rules the tests apply, as
// written there.
func securityRules(t testing.TB) map[string][][]string {
	t.Helper()
	return redistest.ACLRules(t, "../docs/SECURITY.md")
}

// aclCommand returns the ACL SETUSER command that creates the documented user with the
// rules of blocks and those the server line behind admin needs (redistest.LineBlocks),
// less the rules in without.
func aclCommand(t testing.TB, admin rueidis.Client, rules map[string][][]string, blocks []string, without ...string) []string {
	t.Helper()
	blocks = append(slices.Clone(blocks), redistest.LineBlocks(t, admin)...)
	return redistest.ACLUser(t, rules, aclUser, aclPassword, blocks, without...)
}

// aclServer starts a server whose documented user has the rules of blocks less without, and
// returns it with a client of that user (rueidis's default options, with its credentials)
// and an admin client (the default user).
func aclServer(t *testing.T, blocks []string, without ...string) (*redistest.Server, rueidis.Client, rueidis.Client) {
	t.Helper()
	srv := redistest.StartProcess(t, redistest.ProcessOptions{})
	admin := srv.Client(t)
	redistest.ApplyACL(t, admin, aclCommand(t, admin, securityRules(t), blocks, without...))
	user := srv.Client(t, func(o *rueidis.ClientOption) { o.Username, o.Password = aclUser, aclPassword })
	return srv, user, admin
}

// requireNoRefusals fails the test when the server refused anything to a user (ACL LOG): the
// documented rules must cover every call, including those a client makes and ignores the
// error of. The one refusal allowed is the one docs/SECURITY.md tells of: Redisson 4's
// cluster detection at start-up, a script on the keys test1 and test2.
func requireNoRefusals(t *testing.T, admin rueidis.Client) {
	t.Helper()
	entries, err := admin.Do(context.Background(), admin.B().AclLog().Count(100).Build()).ToArray()
	require.NoError(t, err)
	for _, e := range entries {
		m, err := e.AsStrMap()
		require.NoError(t, err)
		if m["reason"] == "key" && m["object"] == "test1" && m["username"] == "orders-java" {
			continue
		}
		t.Errorf("ACL LOG: the server refused %s %q to %s (%s)", m["reason"], m["object"], m["username"], m["client-info"])
	}
}

// The blocks a Go service needs per type (the table of docs/SECURITY.md).
var (
	goRLock     = []string{"rueidis", "locks", "lock-pubsub"}
	goFenced    = []string{"rueidis", "locks", "lock-pubsub", "fenced"}
	goSpin      = []string{"rueidis", "locks"}
	goLatch     = []string{"rueidis", "countdownlatch"}
	goSemaphore = []string{"rueidis", "semaphore"}
	goFair      = []string{"rueidis", "locks", "lock-pubsub", "fair"}
	goRW        = []string{"rueidis", "locks", "read-write"}
	goXSem      = []string{"rueidis", "expirable-semaphore"}
)

// TestSecurityDocExample: the full example of docs/SECURITY.md is the user of its blocks.
func TestSecurityDocExample(t *testing.T) {
	rules := securityRules(t)
	require.Len(t, rules["example-go-rlock"], 1)
	assert.Equal(t, redistest.ACLUser(t, rules, aclUser, aclPassword, goRLock), rules["example-go-rlock"][0])
	require.Len(t, rules["example-go-rlock-not-7.0"], 1)
	assert.Equal(t, redistest.ACLUser(t, rules, aclUser, aclPassword, []string{"rueidis", "rueidis-not-7.0", "locks", "lock-pubsub"}),
		rules["example-go-rlock-not-7.0"][0])
}

// waitSubscribed waits until channel has a subscriber (classic pub/sub, a single server).
func waitSubscribed(t *testing.T, admin rueidis.Client, channel string) {
	t.Helper()
	require.True(t, redistest.Poll(20*time.Second, time.Millisecond, func() bool {
		return redistest.NumSub(t, admin, channel) > 0
	}), "a waiter subscribed to %s", channel)
}

// exerciseRLock runs lock, re-entry, wait and wake-up, the watchdog and force unlock on l
// (a lock of a Client with a 1 s watchdog), other being the same lock from another Client;
// subscribed waits until the lock's channel has a subscriber.
func exerciseRLock(t *testing.T, ctx context.Context, subscribed func(channel string), l, other *rlock.Lock) {
	t.Helper()
	channel := "redisson_lock__channel:{" + l.Name() + "}"
	a, b := rlock.NewOwner(ctx), rlock.NewOwner(ctx)

	// Lock and re-entry.
	require.NoError(t, l.Lock(a))
	require.NoError(t, l.Lock(a))
	n, err := l.HoldCount(a)
	require.NoError(t, err)
	assert.Equal(t, 2, n)
	locked, err := l.IsLocked(ctx)
	require.NoError(t, err)
	assert.True(t, locked)
	_, err = l.RemainTTL(ctx)
	require.NoError(t, err)

	// Wait and wake-up: b waits on the channel until a's last unlock.
	got := make(chan error, 1)
	go func() { got <- other.Lock(b) }()
	subscribed(channel)

	// Watchdog: a keeps the lock past several leases.
	held, stop, err := l.Held(a)
	require.NoError(t, err)
	defer stop()
	for end := time.Now().Add(3 * time.Second); time.Now().Before(end); {
		ok, err := l.IsHeld(a)
		require.NoError(t, err)
		require.True(t, ok, "the watchdog kept the lock")
		require.NoError(t, held.Err())
		select {
		case err := <-got:
			t.Fatalf("the waiter got the lock while it was held: %v", err)
		case <-time.After(100 * time.Millisecond):
		}
	}
	require.NoError(t, l.Unlock(a))
	require.NoError(t, l.Unlock(a))
	require.NoError(t, <-got, "the waiter woke and took the lock")

	// Force unlock wakes the next waiter.
	go func() { got <- l.Lock(a) }()
	subscribed(channel)
	freed, err := l.ForceUnlock(ctx)
	require.NoError(t, err)
	assert.True(t, freed)
	require.NoError(t, <-got)
	require.NoError(t, l.Unlock(a))
}

// TestACLRLock: with exactly the documented rules for NewLock, a Go service locks,
// re-enters, waits and is woken, keeps its lock with the watchdog and force-unlocks.
func TestACLRLock(t *testing.T) {
	_, user, admin := aclServer(t, goRLock)
	ctx := redistest.Context(t, 2*time.Minute)
	name := aclPrefix + redistest.Name(t)
	opts := rlock.Options{WatchdogTimeout: time.Second}
	l := rlocktest.NewClient(t, user, opts).NewLock(name)
	other := rlocktest.NewClient(t, user, opts).NewLock(name)
	exerciseRLock(t, ctx, func(ch string) { waitSubscribed(t, admin, ch) }, l, other)

	// Each type of the same family: non-reentrant under the same rules.
	nr := rlocktest.NewClient(t, user, opts).NewNonReentrantLock(aclPrefix + "nr:" + redistest.Name(t))
	a := rlock.NewOwner(ctx)
	require.NoError(t, nr.Lock(a))
	assert.ErrorIs(t, nr.Lock(a), rlock.ErrReentry)
	require.NoError(t, nr.Unlock(a))
	requireNoRefusals(t, admin)
}

// TestACLOtherTypes: each other type works with exactly its documented rules.
func TestACLOtherTypes(t *testing.T) {
	t.Run("fenced", func(t *testing.T) {
		_, user, admin := aclServer(t, goFenced)
		ctx := redistest.Context(t, time.Minute)
		c := rlocktest.NewClient(t, user, rlock.Options{WatchdogTimeout: time.Second})
		f := c.NewFencedLock(aclPrefix + redistest.Name(t))
		a, b := rlock.NewOwner(ctx), rlock.NewOwner(ctx)
		t1, err := f.Lock(a)
		require.NoError(t, err)
		got := make(chan int64, 1)
		go func() {
			tok, err := f.Lock(b)
			assert.NoError(t, err)
			got <- tok
		}()
		waitSubscribed(t, admin, "redisson_lock__channel:{"+f.Name()+"}")
		require.NoError(t, f.Unlock(a))
		assert.Greater(t, <-got, t1)
		tok, err := f.Token(ctx)
		require.NoError(t, err)
		assert.Greater(t, tok, t1)
		require.NoError(t, f.Unlock(b))
		requireNoRefusals(t, admin)
	})
	t.Run("spin", func(t *testing.T) {
		_, user, admin := aclServer(t, goSpin)
		ctx := redistest.Context(t, time.Minute)
		c := rlocktest.NewClient(t, user, rlock.Options{WatchdogTimeout: time.Second})
		l := c.NewSpinLock(aclPrefix+redistest.Name(t), rlock.SpinBackoff{})
		a, b := rlock.NewOwner(ctx), rlock.NewOwner(ctx)
		require.NoError(t, l.Lock(a))
		require.NoError(t, l.Lock(a))
		err := l.TryLock(b, 50*time.Millisecond, 0)
		require.ErrorIs(t, err, rlock.ErrLocked)
		require.NoError(t, l.Unlock(a))
		require.NoError(t, l.Unlock(a))
		require.NoError(t, l.TryLock(b, 10*time.Second, 0))
		freed, err := l.ForceUnlock(ctx)
		require.NoError(t, err)
		assert.True(t, freed)
		requireNoRefusals(t, admin)
	})
	t.Run("countdownlatch", func(t *testing.T) {
		_, user, admin := aclServer(t, goLatch)
		ctx := redistest.Context(t, time.Minute)
		c := rlocktest.NewClient(t, user, rlock.Options{})
		l := c.NewCountDownLatch(aclPrefix + redistest.Name(t))
		set, err := l.TrySetCount(ctx, 1)
		require.NoError(t, err)
		require.True(t, set)
		done := make(chan error, 1)
		go func() { done <- l.Await(ctx) }()
		waitSubscribed(t, admin, "redisson_countdownlatch__channel__{"+l.Name()+"}")
		require.NoError(t, l.CountDown(ctx))
		require.NoError(t, <-done)
		n, err := l.Count(ctx)
		require.NoError(t, err)
		assert.Zero(t, n)
		requireNoRefusals(t, admin)
	})
	t.Run("semaphore", func(t *testing.T) {
		_, user, admin := aclServer(t, goSemaphore)
		ctx := redistest.Context(t, time.Minute)
		c := rlocktest.NewClient(t, user, rlock.Options{})
		s := c.NewSemaphore(aclPrefix + redistest.Name(t))
		set, err := s.TrySetPermits(ctx, 1)
		require.NoError(t, err)
		require.True(t, set)
		require.NoError(t, s.Acquire(ctx, 1))
		done := make(chan error, 1)
		go func() { done <- s.Acquire(ctx, 1) }()
		waitSubscribed(t, admin, "redisson_sc:{"+s.Name()+"}")
		require.NoError(t, s.Release(ctx, 1))
		require.NoError(t, <-done)
		require.NoError(t, s.AddPermits(ctx, 2))
		n, err := s.DrainPermits(ctx)
		require.NoError(t, err)
		assert.Equal(t, int64(2), n)
		requireNoRefusals(t, admin)
	})
}

// queuedSubscribed waits until the fair lock name has n waiters queued, each subscribed to its own
// channel as subs counts them.
func queuedSubscribed(t *testing.T, admin rueidis.Client, subs func(channel string) int64, name string, n int) {
	t.Helper()
	require.True(t, redistest.Poll(20*time.Second, time.Millisecond, func() bool {
		q, err := admin.Do(context.Background(), admin.B().Lrange().Key(keys.FairQueue(name)).Start(0).Stop(-1).Build()).AsStrSlice()
		if err != nil || len(q) != n {
			return false
		}
		for _, f := range q {
			if subs(keys.FairWaiterChannel(name, f)) == 0 {
				return false
			}
		}
		return true
	}), "%d waiters queued for %s and subscribed", n, name)
}

// TestACLNewTypes: the fair lock, the read-write lock and the expirable semaphore work with
// exactly their documented rules: acquisition, waiting and wake-up through pub/sub, the
// watchdog, release.
func TestACLNewTypes(t *testing.T) {
	for _, k := range aclNewTypes {
		t.Run(k.name, func(t *testing.T) {
			_, user, admin := aclServer(t, k.blocks)
			k.exercise(t, user, admin, classicSubs(t, admin))
			requireNoRefusals(t, admin)
		})
	}
}

// aclNewTypes are the fair lock, the read-write lock and the expirable semaphore, each with
// its blocks and a run of its calls by an ACL user (user) while admin watches; subs counts
// the subscribers of a channel.
var aclNewTypes = []struct {
	name     string
	blocks   []string
	exercise func(t *testing.T, user, admin rueidis.Client, subs func(channel string) int64)
}{
	{"fair", goFair, exerciseFairACL},
	{"read-write", goRW, exerciseReadWriteACL},
	{"expirable semaphore", goXSem, exerciseExpirableSemaphoreACL},
}

// classicSubs counts a channel's classic subscribers on a single server.
func classicSubs(t *testing.T, admin rueidis.Client) func(channel string) int64 {
	return func(channel string) int64 { return redistest.NumSub(t, admin, channel) }
}

// subscribedTo waits until subs reports a subscriber of channel.
func subscribedTo(t *testing.T, subs func(channel string) int64, channel string) {
	t.Helper()
	require.True(t, redistest.Poll(20*time.Second, time.Millisecond, func() bool { return subs(channel) > 0 }),
		"a waiter subscribed to %s", channel)
}

func exerciseFairACL(t *testing.T, user, admin rueidis.Client, subs func(channel string) int64) {
	ctx := redistest.Context(t, time.Minute)
	opts := rlock.Options{WatchdogTimeout: time.Second}
	name := aclPrefix + redistest.Name(t)
	l := rlocktest.NewClient(t, user, opts).NewFairLock(name)
	other := rlocktest.NewClient(t, user, opts).NewFairLock(name)
	a, b, c := rlock.NewOwner(ctx), rlock.NewOwner(ctx), rlock.NewOwner(ctx)
	require.NoError(t, l.Lock(a))
	require.NoError(t, l.Lock(a))
	order := make(chan string, 2)
	gotB, gotC := make(chan error, 1), make(chan error, 1)
	go func() { err := other.Lock(b); order <- "b"; gotB <- err }()
	queuedSubscribed(t, admin, subs, name, 1)
	go func() { err := l.Lock(c); order <- "c"; gotC <- err }()
	queuedSubscribed(t, admin, subs, name, 2)
	// The watchdog keeps a's lock past several leases while both wait.
	_, stop, err := l.Held(a)
	require.NoError(t, err)
	defer stop()
	for end := time.Now().Add(2500 * time.Millisecond); time.Now().Before(end); {
		ok, err := l.IsHeld(a)
		require.NoError(t, err)
		require.True(t, ok, "the watchdog kept the lock")
		time.Sleep(100 * time.Millisecond)
	}
	require.NoError(t, l.Unlock(a))
	require.NoError(t, l.Unlock(a))
	require.NoError(t, <-gotB, "the first waiter woke and took the lock")
	assert.Equal(t, "b", <-order, "in queue order")
	queuedSubscribed(t, admin, subs, name, 1)
	require.NoError(t, other.Unlock(b))
	require.NoError(t, <-gotC)
	assert.Equal(t, "c", <-order)
	// A waiter that gives up leaves the queue; force unlock (of c's hold) wakes the next one.
	require.ErrorIs(t, other.TryLock(b, 50*time.Millisecond, 0), rlock.ErrLocked)
	queuedSubscribed(t, admin, subs, name, 0)
	go func() { gotB <- other.Lock(b) }()
	queuedSubscribed(t, admin, subs, name, 1)
	freed, err := l.ForceUnlock(ctx)
	require.NoError(t, err)
	assert.True(t, freed)
	require.NoError(t, <-gotB)
	require.NoError(t, other.Unlock(b))
}

func exerciseReadWriteACL(t *testing.T, user, admin rueidis.Client, subs func(channel string) int64) {
	ctx := redistest.Context(t, time.Minute)
	opts := rlock.Options{WatchdogTimeout: time.Second}
	name := aclPrefix + redistest.Name(t)
	rw := rlocktest.NewClient(t, user, opts).NewReadWriteLock(name)
	other := rlocktest.NewClient(t, user, opts).NewReadWriteLock(name)
	channel := "redisson_rwlock:{" + name + "}"
	r1, r2, w := rlock.NewOwner(ctx), rlock.NewOwner(ctx), rlock.NewOwner(ctx)

	// Readers in parallel, re-entered; a writer waits for both.
	require.NoError(t, rw.ReadLock().Lock(r1))
	require.NoError(t, rw.ReadLock().Lock(r1))
	require.NoError(t, other.ReadLock().Lock(r2))
	n, err := rw.ReadLock().HoldCount(r1)
	require.NoError(t, err)
	assert.Equal(t, 2, n)
	got := make(chan error, 1)
	go func() { got <- other.WriteLock().Lock(w) }()
	subscribedTo(t, subs, channel)
	// The watchdog renews the reads (hash and timeout keys) past several leases.
	_, stop, err := rw.ReadLock().Held(r1)
	require.NoError(t, err)
	defer stop()
	for end := time.Now().Add(2500 * time.Millisecond); time.Now().Before(end); {
		ok, err := rw.ReadLock().IsHeld(r1)
		require.NoError(t, err)
		require.True(t, ok, "the watchdog kept the read lock")
		select {
		case err := <-got:
			t.Fatalf("the writer got the lock while it was read: %v", err)
		case <-time.After(100 * time.Millisecond):
		}
	}
	require.NoError(t, rw.ReadLock().Unlock(r1))
	require.NoError(t, rw.ReadLock().Unlock(r1))
	require.NoError(t, other.ReadLock().Unlock(r2))
	require.NoError(t, <-got, "the writer woke and took the lock")
	locked, err := rw.WriteLock().IsLocked(ctx)
	require.NoError(t, err)
	assert.True(t, locked)
	_, err = rw.WriteLock().RemainTTL(ctx)
	require.NoError(t, err)

	// A reader waits for the writer, who also reads (and keeps its read: a downgrade).
	go func() { got <- rw.ReadLock().Lock(r1) }()
	subscribedTo(t, subs, channel)
	require.NoError(t, other.ReadLock().Lock(w))
	require.NoError(t, other.WriteLock().Unlock(w))
	require.NoError(t, <-got, "the reader woke and took the lock")
	locked, err = rw.ReadLock().IsLocked(ctx)
	require.NoError(t, err)
	assert.True(t, locked)
	freed, err := rw.ReadLock().ForceUnlock(ctx)
	require.NoError(t, err)
	assert.True(t, freed)
}

func exerciseExpirableSemaphoreACL(t *testing.T, user, admin rueidis.Client, subs func(channel string) int64) {
	ctx := redistest.Context(t, time.Minute)
	s := rlocktest.NewClient(t, user, rlock.Options{}).NewExpirableSemaphore(aclPrefix + redistest.Name(t))
	set, err := s.TrySetPermits(ctx, 1)
	require.NoError(t, err)
	require.True(t, set)
	ids, err := s.Acquire(ctx, 1, time.Minute)
	require.NoError(t, err)
	require.Len(t, ids, 1)
	lease, expires, err := s.LeaseTime(ctx, ids[0])
	require.NoError(t, err)
	assert.True(t, expires)
	assert.Greater(t, lease, time.Duration(0))
	ok, err := s.UpdateLeaseTime(ctx, ids[0], 2*time.Minute)
	require.NoError(t, err)
	assert.True(t, ok)
	type acquired struct {
		ids []string
		err error
	}
	got := make(chan acquired, 1)
	go func() {
		ids, err := s.TryAcquire(ctx, 1, time.Minute, 0)
		got <- acquired{ids, err}
	}()
	subscribedTo(t, subs, "redisson_sc:{"+s.Name()+"}")
	require.NoError(t, s.Release(ctx, ids[0]), "a release by id wakes the waiter")
	r := <-got
	require.NoError(t, r.err)
	require.Len(t, r.ids, 1)
	released, err := s.TryRelease(ctx, r.ids[0])
	require.NoError(t, err)
	assert.True(t, released)
	// A permit whose lease runs out is reclaimed.
	ids, err = s.Acquire(ctx, 1, 50*time.Millisecond)
	require.NoError(t, err)
	require.True(t, redistest.Poll(20*time.Second, 10*time.Millisecond, func() bool {
		n, err := s.AvailablePermits(ctx)
		require.NoError(t, err)
		return n == 1
	}), "the expired permit came back")
	released, err = s.TryRelease(ctx, ids[0])
	require.NoError(t, err)
	assert.False(t, released, "the expired permit is no longer held")
	require.NoError(t, s.AddPermits(ctx, 2))
	n, err := s.Permits(ctx)
	require.NoError(t, err)
	assert.Equal(t, int64(3), n)
	n, err = s.AcquiredPermits(ctx)
	require.NoError(t, err)
	assert.Zero(t, n)
	ids, err = s.Acquire(ctx, 2, 0)
	require.NoError(t, err)
	require.NoError(t, s.Release(ctx, ids...))
	deleted, err := s.Delete(ctx)
	require.NoError(t, err)
	assert.True(t, deleted)
}

// TestACLGroups: a MultiLock and a RedLock over 3 servers, each with its own ACL user of the
// member type's documented blocks, lock, wait and wake, and release.
func TestACLGroups(t *testing.T) {
	ctx := redistest.Context(t, 2*time.Minute)
	name := aclPrefix + redistest.Name(t)
	var admins []rueidis.Client
	var mine, theirs []*rlock.Lock
	opts := rlock.Options{WatchdogTimeout: time.Second}
	for range 3 {
		_, user, admin := aclServer(t, goRLock)
		admins = append(admins, admin)
		mine = append(mine, rlocktest.NewClient(t, user, opts).NewLock(name))
		theirs = append(theirs, rlocktest.NewClient(t, user, opts).NewLock(name))
	}
	channel := "redisson_lock__channel:{" + name + "}"
	subscribed := func() {
		require.True(t, redistest.Poll(20*time.Second, time.Millisecond, func() bool {
			for _, a := range admins {
				if redistest.NumSub(t, a, channel) > 0 {
					return true
				}
			}
			return false
		}), "a group waiter subscribed to %s", channel)
	}
	type group struct{ lock, unlock func(context.Context) error }
	redLock := func(r *rlock.RedLock) group {
		return group{func(ctx context.Context) error { _, err := r.Lock(ctx); return err }, r.Unlock}
	}
	rl, err := rlock.NewRedLock(mine...)
	require.NoError(t, err)
	rl2, err := rlock.NewRedLock(theirs...)
	require.NoError(t, err)
	ml, err := rlock.NewMultiLock(mine...)
	require.NoError(t, err)
	ml2, err := rlock.NewMultiLock(theirs...)
	require.NoError(t, err)
	for _, g := range [][2]group{{redLock(rl), redLock(rl2)}, {{ml.Lock, ml.Unlock}, {ml2.Lock, ml2.Unlock}}} {
		a, b := rlock.NewOwner(ctx), rlock.NewOwner(ctx)
		require.NoError(t, g[0].lock(a))
		got := make(chan error, 1)
		go func() { got <- g[1].lock(b) }()
		subscribed()
		require.NoError(t, g[0].unlock(a))
		require.NoError(t, <-got, "the waiter woke and took the group")
		require.NoError(t, g[1].unlock(b))
	}
	for _, a := range admins {
		requireNoRefusals(t, a)
	}
}

// requireRefused checks that err is a refusal naming the call, the object and what was
// denied.
func requireRefused(t *testing.T, admin rueidis.Client, err error, op, name string, says ...string) {
	t.Helper()
	require.Error(t, err)
	require.ErrorIsf(t, err, rlock.ErrNoPermission, "%v", err)
	var re *rueidis.RedisError
	assert.True(t, errors.As(err, &re), "Redis's reply is wrapped: %v", err)
	msg := err.Error()
	assert.Contains(t, msg, op+` "`+name+`"`)
	t.Logf("%s", msg)
	if !redistest.Has(t, admin, redistest.ScriptACLCheck) {
		t.Logf("not checking that the error names %q: needs %s, which %s lacks", says,
			redistest.ScriptACLCheck.Name, redistest.BuildOf(t, admin))
		return
	}
	for _, s := range says {
		assert.Contains(t, msg, s)
	}
}

// TestACLMissingPermission: with one documented permission removed, the call that needs it
// fails at once with an error that matches rlock.ErrNoPermission and names the lock and
// what was refused; nothing waits for ever, and nothing is half done.
func TestACLMissingPermission(t *testing.T) {
	t.Run("no PUBLISH", func(t *testing.T) {
		_, user, admin := aclServer(t, goRLock, "+publish")
		ctx := redistest.Context(t, time.Minute)
		l := rlocktest.NewClient(t, user, rlock.Options{}).NewLock(aclPrefix + redistest.Name(t))
		a := rlock.NewOwner(ctx)
		require.NoError(t, l.Lock(a))
		requireRefused(t, admin, l.Unlock(a), "Unlock", l.Name(), "PUBLISH on")
		assert.True(t, redistest.Exists(t, admin, l.Name()), "a refused release changes nothing: the lock stays held")
		_, err := l.ForceUnlock(ctx)
		requireRefused(t, admin, err, "ForceUnlock", l.Name(), "PUBLISH on")
		assert.True(t, redistest.Exists(t, admin, l.Name()))
	})
	t.Run("no SUBSCRIBE", func(t *testing.T) {
		_, user, admin := aclServer(t, goRLock, "+subscribe")
		ctx := redistest.Context(t, time.Minute)
		l := rlocktest.NewClient(t, user, rlock.Options{}).NewLock(aclPrefix + redistest.Name(t))
		a, b := rlock.NewOwner(ctx), rlock.NewOwner(ctx)
		require.NoError(t, l.Lock(a))
		requireRefused(t, admin, l.Lock(b), "Lock", l.Name(), "'subscribe'")
		requireRefused(t, admin, l.TryLock(b, time.Minute, 0), "TryLock", l.Name(), "'subscribe'")
		require.NoError(t, l.Unlock(a))
	})
	t.Run("no lock channel", func(t *testing.T) {
		_, user, admin := aclServer(t, goRLock, "&redisson_lock__channel:{orders:*")
		ctx := redistest.Context(t, time.Minute)
		l := rlocktest.NewClient(t, user, rlock.Options{}).NewLock(aclPrefix + redistest.Name(t))
		channel := "redisson_lock__channel:{" + l.Name() + "}"
		a, b := rlock.NewOwner(ctx), rlock.NewOwner(ctx)
		require.NoError(t, l.Lock(a))
		requireRefused(t, admin, l.Lock(b), "Lock", l.Name(), "SUBSCRIBE to "+channel)
		requireRefused(t, admin, l.Unlock(a), "Unlock", l.Name(), "PUBLISH on "+channel)
	})
	t.Run("no unlock latch keys", func(t *testing.T) {
		_, user, admin := aclServer(t, goRLock, "~redisson_unlock_latch:{orders:*")
		ctx := redistest.Context(t, time.Minute)
		l := rlocktest.NewClient(t, user, rlock.Options{}).NewLock(aclPrefix + redistest.Name(t))
		a := rlock.NewOwner(ctx)
		require.NoError(t, l.Lock(a))
		requireRefused(t, admin, l.Unlock(a), "Unlock", l.Name(), "use the key redisson_unlock_latch:{"+l.Name()+"}:")
		assert.True(t, redistest.Exists(t, admin, l.Name()))
	})
	t.Run("no EVALSHA", func(t *testing.T) {
		_, user, admin := aclServer(t, goRLock, "+evalsha")
		ctx := redistest.Context(t, time.Minute)
		l := rlocktest.NewClient(t, user, rlock.Options{}).NewLock(aclPrefix + redistest.Name(t))
		requireRefused(t, admin, l.Lock(rlock.NewOwner(ctx)), "Lock", l.Name(), "'evalsha'")
	})
	t.Run("latch without its channel", func(t *testing.T) {
		_, user, admin := aclServer(t, goLatch, "&redisson_countdownlatch__channel__{orders:*")
		ctx := redistest.Context(t, time.Minute)
		l := rlocktest.NewClient(t, user, rlock.Options{}).NewCountDownLatch(aclPrefix + redistest.Name(t))
		_, err := l.TrySetCount(ctx, 1)
		requireRefused(t, admin, err, "TrySetCount", l.Name(), "PUBLISH on redisson_countdownlatch__channel__{"+l.Name()+"}")
		assert.False(t, redistest.Exists(t, admin, l.Name()), "a refused publish changes nothing")
	})
	t.Run("semaphore without PUBLISH", func(t *testing.T) {
		_, user, admin := aclServer(t, goSemaphore, "+publish")
		ctx := redistest.Context(t, time.Minute)
		s := rlocktest.NewClient(t, user, rlock.Options{}).NewSemaphore(aclPrefix + redistest.Name(t))
		redistest.Do(t, admin, admin.B().Set().Key(s.Name()).Value("1").Build())
		requireRefused(t, admin, s.Release(ctx, 2), "Release", s.Name(), "PUBLISH on redisson_sc:{"+s.Name()+"}")
		n, err := s.AvailablePermits(ctx)
		require.NoError(t, err)
		assert.Equal(t, int64(1), n, "a refused publish changes nothing")
	})
	t.Run("semaphore without its keys", func(t *testing.T) {
		_, user, admin := aclServer(t, goSemaphore, "~redisson_sc:{orders:*")
		ctx := redistest.Context(t, time.Minute)
		s := rlocktest.NewClient(t, user, rlock.Options{}).NewSemaphore(aclPrefix + redistest.Name(t))
		_, err := s.TrySetPermits(ctx, 1)
		requireRefused(t, admin, err, "TrySetPermits", s.Name(), "use the key redisson_sc:{"+s.Name()+"}")
	})
}

// TestACLNewTypesMissingPermission: the same for the fair lock, the read-write lock, the
// expirable semaphore and the groups.
func TestACLNewTypesMissingPermission(t *testing.T) {
	t.Run("fair lock without its queue keys", func(t *testing.T) {
		_, user, admin := aclServer(t, goFair, "~redisson_lock_queue:{orders:*")
		ctx := redistest.Context(t, time.Minute)
		l := rlocktest.NewClient(t, user, rlock.Options{}).NewFairLock(aclPrefix + redistest.Name(t))
		requireRefused(t, admin, l.Lock(rlock.NewOwner(ctx)), "Lock", l.Name(), "use the key "+keys.FairQueue(l.Name()))
		assert.False(t, redistest.Exists(t, admin, l.Name()))
	})
	t.Run("fair lock without ZADD", func(t *testing.T) {
		_, user, admin := aclServer(t, goFair, "+zadd")
		ctx := redistest.Context(t, time.Minute)
		l := rlocktest.NewClient(t, user, rlock.Options{}).NewFairLock(aclPrefix + redistest.Name(t))
		a, b := rlock.NewOwner(ctx), rlock.NewOwner(ctx)
		require.NoError(t, l.Lock(a), "a free lock is taken without queueing")
		requireRefused(t, admin, l.Lock(b), "Lock", l.Name(), "run ZADD")
		assert.False(t, redistest.Exists(t, admin, keys.FairQueue(l.Name())), "the refused waiter is not queued")
		require.NoError(t, l.Unlock(a))
	})
	t.Run("read-write lock without its channel", func(t *testing.T) {
		_, user, admin := aclServer(t, goRW, "&redisson_rwlock:{orders:*")
		ctx := redistest.Context(t, time.Minute)
		rw := rlocktest.NewClient(t, user, rlock.Options{}).NewReadWriteLock(aclPrefix + redistest.Name(t))
		channel := "redisson_rwlock:{" + rw.Name() + "}"
		r, w := rlock.NewOwner(ctx), rlock.NewOwner(ctx)
		require.NoError(t, rw.ReadLock().Lock(r))
		requireRefused(t, admin, rw.WriteLock().Lock(w), "Lock", rw.Name(), "SUBSCRIBE to "+channel)
		requireRefused(t, admin, rw.WriteLock().TryLock(w, time.Minute, 0), "TryLock", rw.Name(), "SUBSCRIBE to "+channel)
		requireRefused(t, admin, rw.ReadLock().Unlock(r), "Unlock", rw.Name(), "PUBLISH on "+channel)
		assert.True(t, redistest.Exists(t, admin, rw.Name()), "a refused release changes nothing: the lock stays held")
	})
	t.Run("fair lock without PUBLISH", func(t *testing.T) {
		_, user, admin := aclServer(t, goFair, "+publish")
		ctx := redistest.Context(t, time.Minute)
		l := rlocktest.NewClient(t, user, rlock.Options{}).NewFairLock(aclPrefix + redistest.Name(t))
		a := rlock.NewOwner(ctx)
		require.NoError(t, l.Lock(a))
		// A waiter queued by another user: the release has someone to wake.
		redistest.Do(t, admin, admin.B().Rpush().Key(keys.FairQueue(l.Name())).Element("w").Build())
		redistest.Do(t, admin, admin.B().Zadd().Key(keys.FairTimeout(l.Name())).ScoreMember().
			ScoreMember(float64(time.Now().Add(time.Hour).UnixMilli()), "w").Build())
		requireRefused(t, admin, l.Unlock(a), "Unlock", l.Name(), "PUBLISH on "+keys.LockChannel(l.Name()))
		assert.True(t, redistest.Exists(t, admin, l.Name()), "a refused release changes nothing: the lock stays held")
	})
	t.Run("read-write lock without the readers' timeout keys", func(t *testing.T) {
		_, user, admin := aclServer(t, goRW, "~{orders:*")
		ctx := redistest.Context(t, time.Minute)
		rw := rlocktest.NewClient(t, user, rlock.Options{}).NewReadWriteLock(aclPrefix + redistest.Name(t))
		requireRefused(t, admin, rw.ReadLock().Lock(rlock.NewOwner(ctx)), "Lock", rw.Name(), "use the key {"+rw.Name()+"}:")
		assert.False(t, redistest.Exists(t, admin, rw.Name()), "a refused read changes nothing")
	})
	t.Run("expirable semaphore without ZADD", func(t *testing.T) {
		_, user, admin := aclServer(t, goXSem, "+zadd")
		ctx := redistest.Context(t, time.Minute)
		s := rlocktest.NewClient(t, user, rlock.Options{}).NewExpirableSemaphore(aclPrefix + redistest.Name(t))
		set, err := s.TrySetPermits(ctx, 1)
		require.NoError(t, err)
		require.True(t, set)
		_, err = s.Acquire(ctx, 1, time.Minute)
		requireRefused(t, admin, err, "Acquire", s.Name(), "run ZADD")
		n, err := s.AvailablePermits(ctx)
		require.NoError(t, err)
		assert.Equal(t, int64(1), n, "a refused acquisition takes nothing")
	})
	t.Run("expirable semaphore without PUBLISH", func(t *testing.T) {
		_, user, admin := aclServer(t, goXSem, "+publish")
		ctx := redistest.Context(t, time.Minute)
		s := rlocktest.NewClient(t, user, rlock.Options{}).NewExpirableSemaphore(aclPrefix + redistest.Name(t))
		redistest.Do(t, admin, admin.B().Set().Key(s.Name()).Value("1").Build())
		ids, err := s.Acquire(ctx, 1, 0)
		require.NoError(t, err)
		requireRefused(t, admin, s.Release(ctx, ids[0]), "Release", s.Name(), "PUBLISH on redisson_sc:{"+s.Name()+"}")
		n, err := s.AcquiredPermits(ctx)
		require.NoError(t, err)
		assert.Equal(t, int64(1), n, "a refused publish changes nothing: the permit stays held")
	})
	t.Run("groups without EVALSHA", func(t *testing.T) {
		ctx := redistest.Context(t, time.Minute)
		name := aclPrefix + redistest.Name(t)
		var locks []*rlock.Lock
		var admin rueidis.Client
		for range 3 {
			var user rueidis.Client
			_, user, admin = aclServer(t, goRLock, "+evalsha")
			locks = append(locks, rlocktest.NewClient(t, user, rlock.Options{}).NewLock(name))
		}
		rl, err := rlock.NewRedLock(locks...)
		require.NoError(t, err)
		_, err = rl.Lock(rlock.NewOwner(ctx))
		requireRefused(t, admin, err, "Lock", rl.Name(), "'evalsha'")
		assert.ErrorIs(t, err, rlock.ErrNoQuorum)
		ml, err := rlock.NewMultiLock(locks...)
		require.NoError(t, err)
		requireRefused(t, admin, ml.Lock(rlock.NewOwner(ctx)), "Lock", ml.Name(), "'evalsha'")
	})
}

// TestACLRevokedWhileWaiting: when the user loses its channel while a waiter waits, the
// server drops the subscription, subscribing again is refused, and the waiter gets the
// refusal instead of waiting on.
func TestACLRevokedWhileWaiting(t *testing.T) {
	_, user, admin := aclServer(t, goRLock)
	ctx := redistest.Context(t, time.Minute)
	l := rlocktest.NewClient(t, user, rlock.Options{}).NewLock(aclPrefix + redistest.Name(t))
	channel := "redisson_lock__channel:{" + l.Name() + "}"
	a, b := rlock.NewOwner(ctx), rlock.NewOwner(ctx)
	require.NoError(t, l.Lock(a))
	got := make(chan error, 1)
	go func() { got <- l.Lock(b) }()
	waitSubscribed(t, admin, channel)
	redistest.ApplyACL(t, admin, []string{"ACL", "SETUSER", aclUser, "resetchannels"})
	requireRefused(t, admin, <-got, "Lock", l.Name(), "SUBSCRIBE to "+channel)
}

// TestTLS: lock, wait and wake-up, and the watchdog over TLS, connected with a rediss://
// URL as the documented user, trusting the test's CA.
func TestTLS(t *testing.T) {
	srv := redistest.StartTLS(t)
	admin := srv.Client(t)
	redistest.ApplyACL(t, admin, aclCommand(t, admin, securityRules(t), goRLock))
	opt, err := rueidis.ParseURL("rediss://" + aclUser + ":" + aclPassword + "@" + srv.TLSAddr)
	require.NoError(t, err)
	opt.TLSConfig.RootCAs = srv.Certs.Pool
	user, err := rueidis.NewClient(opt)
	require.NoError(t, err)
	t.Cleanup(user.Close)

	ctx := redistest.Context(t, 2*time.Minute)
	name := aclPrefix + redistest.Name(t)
	opts := rlock.Options{WatchdogTimeout: time.Second}
	l := rlocktest.NewClient(t, user, opts).NewLock(name)
	other := rlocktest.NewClient(t, user, opts).NewLock(name)
	exerciseRLock(t, ctx, func(ch string) { waitSubscribed(t, admin, ch) }, l, other)
	requireNoRefusals(t, admin)
}

// The blocks of a service that uses every type, Go and Java.
var allTypes = []string{"locks", "lock-pubsub", "fenced", "countdownlatch", "semaphore", "fair", "read-write", "expirable-semaphore"}

// TestJavaACLTLS: a Java Redisson service and a Go service, each logged in over TLS as an
// ACL user with the documented blocks for every type (the Java user with the blocks for
// Redisson instead of rueidis's), wake each other's waiters, renew their locks, and share
// fenced tokens, a latch and semaphores, queue for a fair lock, read and write a read-write
// lock, and hold a MultiLock.
func TestJavaACLTLS(t *testing.T) {
	forEachVersion(t, func(t *testing.T, v string) {
		jar := javapeer.JarPath(t, v)
		srv := redistest.StartTLS(t)
		admin := srv.Client(t)
		rules := securityRules(t)
		redistest.ApplyACL(t, admin,
			aclCommand(t, admin, rules, append([]string{"rueidis"}, allTypes...)),
			redistest.ACLUser(t, rules, "orders-java", aclPassword, append([]string{"redisson", "redisson-expirable-semaphore"}, allTypes...)))
		peer := javapeer.Start(t, jar, "rediss://"+srv.TLSAddr, javapeer.WithAuth("orders-java", aclPassword),
			javapeer.WithCA(srv.Certs.CAFile), javapeer.WithWatchdog(time.Second))
		user := srv.TLSClient(t, func(o *rueidis.ClientOption) { o.Username, o.Password = aclUser, aclPassword })
		goc := rlocktest.NewClient(t, user, rlock.Options{WatchdogTimeout: time.Second})
		ctx := redistest.Context(t, 3*time.Minute)
		name := aclPrefix + redistest.Name(t)
		channel := "redisson_lock__channel:{" + name + "}"
		l := goc.NewLock(name)
		a := rlock.NewOwner(ctx)

		// Java holds (renewed by its watchdog past several leases), a Go waiter wakes on its release.
		require.Equal(t, "true", peer.Must(t, ctx, "J1", "lock", name))
		got := make(chan error, 1)
		go func() { got <- l.Lock(a) }()
		waitSubscribed(t, admin, channel)
		for end := time.Now().Add(3 * time.Second); time.Now().Before(end); {
			require.True(t, redistest.Exists(t, admin, name), "Java's watchdog keeps its lock")
			select {
			case err := <-got:
				t.Fatalf("Go took the lock Java holds: %v", err)
			case <-time.After(100 * time.Millisecond):
			}
		}
		peer.Must(t, ctx, "J1", "unlock", name)
		require.NoError(t, <-got)

		// Go holds, a Java waiter wakes on its release; Java force-unlocks.
		java := make(chan string, 1)
		go func() { java <- peer.Must(t, ctx, "J2", "trylock", name, "60000", "-1") }()
		require.True(t, redistest.Poll(20*time.Second, time.Millisecond, func() bool {
			return redistest.NumSub(t, admin, channel) > 0
		}))
		require.NoError(t, l.Unlock(a))
		assert.Equal(t, "true", <-java)
		assert.Equal(t, "true", peer.Must(t, ctx, "J3", "forceunlock", name))

		// Fenced tokens increase across Java and Go (Redisson 3.19.0+).
		if javapeer.Has(v, javapeer.FencedLock) {
			fname := aclPrefix + "fenced:" + redistest.Name(t)
			jt := peer.Must(t, ctx, "J1", "fenced.lock", fname)
			peer.Must(t, ctx, "J1", "fenced.unlock", fname)
			f := goc.NewFencedLock(fname)
			gt, err := f.Lock(a)
			require.NoError(t, err)
			assert.Greater(t, gt, mustInt(t, jt))
			require.NoError(t, f.Unlock(a))
		}

		// A Go count-down opens a Java await.
		latch := goc.NewCountDownLatch(aclPrefix + "latch:" + redistest.Name(t))
		set, err := latch.TrySetCount(ctx, 1)
		require.NoError(t, err)
		require.True(t, set)
		go func() { java <- peer.Must(t, ctx, "J4", "latch.await", latch.Name(), "60000") }()
		waitSubscribed(t, admin, "redisson_countdownlatch__channel__{"+latch.Name()+"}")
		require.NoError(t, latch.CountDown(ctx))
		assert.Equal(t, "true", <-java)

		// A Go release wakes a Java acquirer.
		sem := goc.NewSemaphore(aclPrefix + "sem:" + redistest.Name(t))
		assert.Equal(t, "true", peer.Must(t, ctx, "J5", "sem.setpermits", sem.Name(), "1"))
		require.NoError(t, sem.Acquire(ctx, 1))
		go func() { java <- peer.Must(t, ctx, "J5", "sem.tryacquire", sem.Name(), "1", "60000") }()
		waitSubscribed(t, admin, "redisson_sc:{"+sem.Name()+"}")
		require.NoError(t, sem.Release(ctx, 1))
		assert.Equal(t, "true", <-java)

		// The spin lock: no pub/sub.
		sname := aclPrefix + "spin:" + redistest.Name(t)
		assert.Equal(t, "true", peer.Must(t, ctx, "J6", "spin.lock", sname))
		peer.Must(t, ctx, "J6", "spin.unlock", sname)
		require.NoError(t, goc.NewSpinLock(sname, rlock.SpinBackoff{}).TryLock(a, 10*time.Second, 0))

		// The fair lock: a Go waiter queued behind Java is woken by its release, and a Java
		// waiter queued behind Go by Go's.
		fair := goc.NewFairLock(aclPrefix + "fair:" + redistest.Name(t))
		assert.Equal(t, "true", peer.Must(t, ctx, "J7", "fair.lock", fair.Name()))
		go func() { got <- fair.Lock(a) }()
		queuedSubscribed(t, admin, classicSubs(t, admin), fair.Name(), 1)
		peer.Must(t, ctx, "J7", "fair.unlock", fair.Name())
		require.NoError(t, <-got)
		go func() { java <- peer.Must(t, ctx, "J8", "fair.trylock", fair.Name(), "60000", "-1") }()
		queuedSubscribed(t, admin, classicSubs(t, admin), fair.Name(), 1)
		require.NoError(t, fair.Unlock(a))
		assert.Equal(t, "true", <-java)
		peer.Must(t, ctx, "J8", "fair.unlock", fair.Name())

		// The read-write lock: Java and Go read at once; a Go writer waits for both, and a
		// Java writer for it.
		rw := goc.NewReadWriteLock(aclPrefix + "rw:" + redistest.Name(t))
		rwChannel := "redisson_rwlock:{" + rw.Name() + "}"
		assert.Equal(t, "true", peer.Must(t, ctx, "J9", "read.lock", rw.Name()))
		require.NoError(t, rw.ReadLock().Lock(a))
		b := rlock.NewOwner(ctx)
		go func() { got <- rw.WriteLock().Lock(b) }()
		waitSubscribed(t, admin, rwChannel)
		// Both watchdogs renew the reads (Redisson's read renewal script included).
		for end := time.Now().Add(2500 * time.Millisecond); time.Now().Before(end); {
			require.True(t, redistest.Exists(t, admin, rw.Name()), "the watchdogs keep the reads")
			select {
			case err := <-got:
				t.Fatalf("the Go writer got the lock while it was read: %v", err)
			case <-time.After(100 * time.Millisecond):
			}
		}
		peer.Must(t, ctx, "J9", "read.unlock", rw.Name())
		require.NoError(t, rw.ReadLock().Unlock(a))
		require.NoError(t, <-got, "the Go writer woke once both readers left")
		go func() { java <- peer.Must(t, ctx, "J10", "write.trylock", rw.Name(), "60000", "-1") }()
		waitSubscribed(t, admin, rwChannel)
		require.NoError(t, rw.WriteLock().Unlock(b))
		assert.Equal(t, "true", <-java)
		peer.Must(t, ctx, "J10", "write.unlock", rw.Name())

		// The expirable semaphore: a Java acquirer (with a lease) is woken by a Go release by
		// id, and Go releases the permit Java took.
		xsem := goc.NewExpirableSemaphore(aclPrefix + "xsem:" + redistest.Name(t))
		assert.Equal(t, "true", peer.Must(t, ctx, "J11", "xsem.setpermits", xsem.Name(), "1"))
		ids, err := xsem.Acquire(ctx, 1, time.Minute)
		require.NoError(t, err)
		go func() { java <- peer.Must(t, ctx, "J11", "xsem.tryacquire", xsem.Name(), "1", "60000", "60000") }()
		waitSubscribed(t, admin, "redisson_sc:{"+xsem.Name()+"}")
		require.NoError(t, xsem.Release(ctx, ids...))
		jid := <-java
		require.Len(t, jid, 32, "Java got a permit id")
		if javapeer.Has(v, javapeer.ExpirableSemaphoreMulti) {
			assert.Equal(t, "1", peer.Must(t, ctx, "J11", "xsem.acquired", xsem.Name()))
			assert.Equal(t, "1", peer.Must(t, ctx, "J11", "xsem.permits", xsem.Name()))
		}
		require.NoError(t, xsem.Release(ctx, jid))

		// A MultiLock over two locks: Java holds it, a Go group waiter wakes on its release.
		m1, m2 := aclPrefix+"m1:"+redistest.Name(t), aclPrefix+"m2:"+redistest.Name(t)
		assert.Equal(t, "true", peer.Must(t, ctx, "J12", "multilock.lock", m1+","+m2))
		ml, err := rlock.NewMultiLock(goc.NewLock(m1), goc.NewLock(m2))
		require.NoError(t, err)
		go func() { got <- ml.Lock(a) }()
		require.True(t, redistest.Poll(20*time.Second, time.Millisecond, func() bool {
			return redistest.NumSub(t, admin, "redisson_lock__channel:{"+m1+"}")+redistest.NumSub(t, admin, "redisson_lock__channel:{"+m2+"}") > 0
		}), "the Go group waits")
		peer.Must(t, ctx, "J12", "multilock.unlock", m1+","+m2)
		require.NoError(t, <-got)
		require.NoError(t, ml.Unlock(a))
		requireNoRefusals(t, admin)
	})
}

func mustInt(t *testing.T, s string) int64 {
	t.Helper()
	n, err := strconv.ParseInt(s, 10, 64)
	require.NoError(t, err)
	return n
}

// TestACLReplicaSync: with replica sync on, the documented blocks and replica sync's let the
// lock writes wait for the replica (WAIT, after INFO replication), and nothing is refused.
func TestACLReplicaSync(t *testing.T) {
	master := redistest.StartProcess(t, redistest.ProcessOptions{})
	host, port, err := net.SplitHostPort(master.Addr)
	require.NoError(t, err)
	redistest.StartProcess(t, redistest.ProcessOptions{Args: []string{"--replicaof", host, port}})
	admin := master.Client(t)
	require.True(t, redistest.Poll(30*time.Second, 10*time.Millisecond, func() bool {
		info := redistest.Do(t, admin, admin.B().Info().Section("replication").Build())
		s, _ := info.ToString()
		return strings.Contains(s, "connected_slaves:1") && strings.Contains(s, "state=online")
	}), "the replica is online")
	redistest.ApplyACL(t, admin, aclCommand(t, admin, securityRules(t), append(slices.Clone(goRLock), "replica-sync")))
	user := master.Client(t, func(o *rueidis.ClientOption) { o.Username, o.Password = aclUser, aclPassword })
	ctx := redistest.Context(t, 2*time.Minute)
	name := aclPrefix + redistest.Name(t)
	opts := rlock.Options{WatchdogTimeout: time.Second, ReplicaSync: rlock.ReplicaSyncOn}
	l := rlocktest.NewClient(t, user, opts).NewLock(name)
	other := rlocktest.NewClient(t, user, opts).NewLock(name)
	exerciseRLock(t, ctx, func(ch string) { waitSubscribed(t, admin, ch) }, l, other)
	stats, err := admin.Do(ctx, admin.B().Info().Section("commandstats").Build()).ToString()
	require.NoError(t, err)
	assert.Contains(t, stats, "cmdstat_wait:calls=", "the lock writes waited for the replica")
	requireNoRefusals(t, admin)
}

// TestACLCluster: in a Redis Cluster (ACL users on every node), the documented blocks and the
// cluster's and replica sync's let a Go service lock, wait and wake (sharded and classic
// pub/sub), renew and force-unlock, and nothing is refused.
func TestACLCluster(t *testing.T) {
	user, admin, nodes := aclCluster(t, goRLock)
	redistest.Require(t, admin, redistest.ShardedPubSub) // the blocks applied as pasted; the run watches sharded subscriptions
	ctx := redistest.Context(t, 2*time.Minute)
	name := aclPrefix + redistest.Name(t)
	opts := rlock.Options{WatchdogTimeout: time.Second}
	l := rlocktest.NewClient(t, user, opts).NewLock(name)
	other := rlocktest.NewClient(t, user, opts).NewLock(name)
	exerciseRLock(t, ctx, func(ch string) {
		require.True(t, redistest.Poll(20*time.Second, time.Millisecond, func() bool {
			return redistest.ShardNumSub(t, admin, ch) > 0
		}), "a waiter subscribed to %s", ch)
	}, l, other)
	for _, n := range nodes {
		requireNoRefusals(t, n)
	}
}

// aclCluster starts a Redis Cluster whose every node has the ACL user of blocks and, as
// docs/SECURITY.md says for a cluster, the replica sync and cluster blocks, and returns a cluster client of that user, one of the default user, and a
// client of each node.
func aclCluster(t *testing.T, blocks []string) (user, admin rueidis.Client, nodes []rueidis.Client) {
	t.Helper()
	cluster := redistest.StartCluster(t)
	probe := cluster.NodeClient(t, cluster.Addrs()[0])
	blocks = append(slices.Clone(blocks), "replica-sync", "cluster")
	if redistest.Has(t, probe, redistest.ShardedPubSub) {
		blocks = append(blocks, "cluster-sharded")
	}
	cmd := aclCommand(t, probe, securityRules(t), blocks)
	for _, addr := range cluster.Addrs() {
		n := cluster.NodeClient(t, addr)
		redistest.ApplyACL(t, n, cmd)
		nodes = append(nodes, n)
	}
	admin = cluster.Client(t)
	user = cluster.Client(t, func(o *rueidis.ClientOption) { o.Username, o.Password = aclUser, aclPassword })
	return user, admin, nodes
}

// TestACLClusterNewTypes: the fair lock, the read-write lock and the expirable semaphore run
// by an ACL user of their documented blocks with replica sync's and the cluster's on a Redis
// Cluster, where
// their waiters subscribe with SSUBSCRIBE as well; no node refuses anything.
func TestACLClusterNewTypes(t *testing.T) {
	for _, k := range aclNewTypes {
		t.Run(k.name, func(t *testing.T) {
			user, admin, nodes := aclCluster(t, k.blocks)
			redistest.Require(t, admin, redistest.ShardedPubSub) // the blocks applied as pasted; the run watches sharded subscriptions
			k.exercise(t, user, admin, func(channel string) int64 { return redistest.ShardNumSub(t, admin, channel) })
			for _, n := range nodes {
				requireNoRefusals(t, n)
			}
		})
	}
}
