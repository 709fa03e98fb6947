package faults

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/goredisson/goredisson/internal/redistest"
	"github.com/goredisson/goredisson/internal/redistest/rlocktest"
	"github.com/goredisson/goredisson/rlock"
)

// The permit holder is this test binary run again as a separate process (env permitsEnv
// set): it acquires permits of an expirable semaphore with a lease,
// prints "acquired <id,id,…>" and then waits on stdin, releasing nothing, until it is
// killed.
const permitsEnv = "GOREDISSON_FAULT_PERMITS" // "<redis addr> <semaphore name> <permits> <lease ms>"

func runPermitHolder(spec string) int {
	var addr, name string
	var permits, leaseMs int64
	if _, err := fmt.Sscan(spec, &addr, &name, &permits, &leaseMs); err != nil {
		fmt.Println("error", err)
		return 2
	}
	ctx := context.Background()
	rc, c, err := holderClient(ctx, addr, rlock.Options{})
	if err != nil {
		fmt.Println("error", err)
		return 1
	}
	defer rc.Close()
	defer c.Close()
	s := c.NewExpirableSemaphore(name)
	ids, err := s.Acquire(ctx, permits, time.Duration(leaseMs)*time.Millisecond)
	if err != nil {
		fmt.Println("error", err)
		return 1
	}
	fmt.Println("acquired", strings.Join(ids, ","))
	_, _ = os.Stdin.Read(make([]byte, 1)) // until killed, or stdin closed
	return 0
}

// F1 for the permit-expirable semaphore: kill -9 of a process that holds every permit with
// a lease. Nobody releases them and nobody publishes their expiry, yet a waiter of another
// client takes one at the expiry, and the killed holder's permits are no longer held.
func TestF1KilledPermitHolderProcess(t *testing.T) {
	srv := redistest.Shared(t)
	rc := srv.Client(t)
	name := redistest.Name(t)
	const permits, lease = 2, 1500 * time.Millisecond
	s := rlocktest.NewClient(t, rc, rlock.Options{}).NewExpirableSemaphore(name)
	_, err := s.TrySetPermits(context.Background(), permits)
	require.NoError(t, err)

	exe, err := os.Executable()
	require.NoError(t, err)
	cmd := exec.Command(exe, "-test.run=^$")
	cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%s %s %d %d", permitsEnv, srv.Addr, name, permits, lease.Milliseconds()))
	stdin, err := cmd.StdinPipe()
	require.NoError(t, err)
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	cmd.Stderr = os.Stderr
	started := time.Now()
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { stdin.Close(); _ = cmd.Process.Kill(); _ = cmd.Wait() })
	line := make([]byte, 200)
	n, err := out.Read(line)
	require.NoError(t, err)
	got := strings.TrimSpace(string(line[:n]))
	require.True(t, strings.HasPrefix(got, "acquired "), "holder said %q", got)
	held := strings.Split(strings.TrimPrefix(got, "acquired "), ",")
	require.Len(t, held, permits)
	require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
	_ = cmd.Wait()
	killed := time.Now()

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ids, err := s.Acquire(ctx, permits, 0)
	require.NoError(t, err, "the forgotten permits come back at their expiry")
	t.Logf("waiter acquired %v after the holder was killed, %v after it acquired (lease %v)",
		time.Since(killed).Round(time.Millisecond), time.Since(started).Round(time.Millisecond), lease)
	assert.Less(t, time.Since(started), lease+5*time.Second, "woken at the expiry, not later")
	for _, id := range held {
		ok, err := s.TryRelease(ctx, id)
		require.NoError(t, err)
		assert.False(t, ok, "the killed holder's permit %s is not held", id)
	}
	require.NoError(t, s.Release(ctx, ids...))
}

// F2-style restart of Redis while synchronizer waiters sleep: the restarted server is
// empty. Each waiter is woken when the client resubscribes and tries again: the latch's
// key is gone, so the latch is open and Await returns; the semaphores have no permits, so
// their waiters sleep again and take the permits set on the new server. None hangs.
func TestRestartWhileSynchronizerWaits(t *testing.T) {
	srv := redistest.Start(t)
	rc := srv.Client(t)
	c := rlocktest.NewClient(t, rc, rlock.Options{})
	name := redistest.Name(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	l := c.NewCountDownLatch(name + ":latch")
	_, err := l.TrySetCount(ctx, 1)
	require.NoError(t, err)
	s := c.NewSemaphore(name + ":sem")
	_, err = s.TrySetPermits(ctx, 0)
	require.NoError(t, err)
	x := c.NewExpirableSemaphore(name + ":xsem")
	_, err = x.TrySetPermits(ctx, 0)
	require.NoError(t, err)

	latchDone, semDone, xsemDone := make(chan error, 1), make(chan error, 1), make(chan error, 1)
	go func() { latchDone <- l.Await(ctx) }()
	go func() { semDone <- s.Acquire(ctx, 1) }()
	go func() {
		_, err := x.Acquire(ctx, 1, time.Minute)
		xsemDone <- err
	}()
	for _, ch := range []string{"redisson_countdownlatch__channel__{" + l.Name() + "}", "redisson_sc:{" + s.Name() + "}", "redisson_sc:{" + x.Name() + "}"} {
		require.True(t, redistest.Poll(10*time.Second, time.Millisecond, func() bool {
			return redistest.NumSub(t, rc, ch)+redistest.ShardNumSub(t, rc, ch) > 0
		}), "a waiter subscribed to %s", ch)
	}

	srv.Restart(t)
	restarted := time.Now()
	select {
	case err := <-latchDone:
		require.NoError(t, err, "the latch's key is gone: it is open")
		t.Logf("latch waiter returned %v after the restart", time.Since(restarted).Round(time.Millisecond))
	case <-time.After(30 * time.Second):
		t.Fatal("the latch waiter still waits 30 s after the restart")
	}
	select {
	case err := <-semDone:
		t.Fatalf("the semaphore waiter returned (%v) with no permit on the new server", err)
	case err := <-xsemDone:
		t.Fatalf("the expirable semaphore waiter returned (%v) with no permit on the new server", err)
	default:
	}
	// The waiters are subscribed again on the new server, and a release there wakes them.
	setAfterRestart(t, func() error { _, err := s.TrySetPermits(ctx, 1); return err })
	setAfterRestart(t, func() error { _, err := x.TrySetPermits(ctx, 1); return err })
	for what, done := range map[string]chan error{"semaphore": semDone, "expirable semaphore": xsemDone} {
		select {
		case err := <-done:
			require.NoError(t, err, what)
		case <-time.After(30 * time.Second):
			t.Fatalf("the %s waiter still waits 30 s after permits were set on the new server", what)
		}
	}
}

// setAfterRestart runs set, a single write made by the test right after a restart, again
// while it fails on the connection (for at most 10 s): such a call reports the failure
// rather than retrying, since the write may have run, and a connection that the client
// has not yet replaced can fail the first one. A set that ran twice is harmless here: the
// second finds the permits set.
func setAfterRestart(t *testing.T, set func() error) {
	t.Helper()
	var err error
	redistest.Poll(10*time.Second, 10*time.Millisecond, func() bool {
		if err = set(); err != nil {
			t.Logf("a write right after the restart failed: %v", err)
		}
		_, isRedis := rueidis.IsRedisErr(err)
		return err == nil || isRedis
	})
	require.NoError(t, err)
}
