package redistest

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/goredisson/goredisson/internal/redisserver"
)

func TestMain(m *testing.M) { Main(m) }

// inProcess runs f as a parallel test in process mode. This module's test binaries run
// no containers; the same checks for container mode are in integration/rediscontainer.
func inProcess(t *testing.T, f func(t *testing.T, mode string)) {
	t.Parallel()
	f(t, ModeProcess)
}

// do runs one command with a 5 s deadline.
func do(t *testing.T, c rueidis.Client, args ...string) rueidis.RedisResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return c.Do(ctx, c.B().Arbitrary(args...).Build())
}

func TestStartGivesEmptyLoopbackServer(t *testing.T) {
	inProcess(t, func(t *testing.T, mode string) {
		start := time.Now()
		s := startMode(t, mode)
		t.Logf("%s server ready on %s in %v", mode, s.Addr, time.Since(start))
		if s.Mode() != mode {
			t.Fatalf("Mode() = %q, want %q", s.Mode(), mode)
		}
		if host, _, err := net.SplitHostPort(s.Addr); err != nil || host != "127.0.0.1" {
			t.Fatalf("Addr = %q, want host 127.0.0.1 (%v)", s.Addr, err)
		}
		c := s.Client(t)
		if got, err := do(t, c, "PING").ToString(); err != nil || got != "PONG" {
			t.Fatalf("PING = %q, %v", got, err)
		}
		if n, err := do(t, c, "DBSIZE").AsInt64(); err != nil || n != 0 {
			t.Fatalf("DBSIZE = %d, %v; want an empty server", n, err)
		}
		// A container runs the image's Redis 7.0; a process runs the program that
		// GOREDISSON_REDIS_SERVER or PATH names, whichever line it is.
		got := BuildOf(t, c)
		if mode == ModeContainer && !strings.HasPrefix(got.String(), "Redis 7.0.") {
			t.Fatalf("INFO server names %v, want Redis 7.0.x (the image's)", got)
		}
		if mode == ModeProcess {
			_, want := programBuild(t)
			if got != want {
				t.Fatalf("INFO server names %v, want %v (what the program's --version says)", got, want)
			}
		}
		for param, want := range map[string]string{"save": "", "appendonly": "no"} {
			kv, err := do(t, c, "CONFIG", "GET", param).AsStrMap()
			if err != nil || kv[param] != want {
				t.Fatalf("CONFIG GET %s = %v, %v; want %q", param, kv, err, want)
			}
		}
	})
}

func TestRestartKeepsAddrAndLosesData(t *testing.T) {
	inProcess(t, func(t *testing.T, mode string) {
		s := startMode(t, mode)
		addr := s.Addr
		c := s.Client(t)
		if err := do(t, c, "SET", "k", "v").Error(); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		s.Restart(t)
		t.Logf("%s restart took %v", mode, time.Since(start))
		if s.Addr != addr {
			t.Fatalf("Addr changed across Restart: %s -> %s", addr, s.Addr)
		}
		if err := redisserver.Ping(addr, time.Second); err != nil {
			t.Fatalf("raw PING after Restart: %v", err)
		}
		// The client's old connection died with the server; rueidis redials.
		// Poll until a GET gets a reply (nil expected) instead of a connection error.
		deadline := time.Now().Add(10 * time.Second)
		for {
			err := do(t, c, "GET", "k").Error()
			if rueidis.IsRedisNil(err) {
				break
			}
			if err == nil {
				t.Fatal("GET k found the value written before Restart; want an empty server")
			}
			if time.Now().After(deadline) {
				t.Fatalf("GET after Restart: %v", err)
			}
		}
	})
}

func TestKillRefusesConnectionsUntilRestart(t *testing.T) {
	inProcess(t, func(t *testing.T, mode string) {
		s := startMode(t, mode)
		s.Kill(t)
		if err := redisserver.Ping(s.Addr, time.Second); err == nil {
			t.Fatal("PING answered after Kill")
		}
		s.Restart(t)
		if err := redisserver.Ping(s.Addr, time.Second); err != nil {
			t.Fatalf("PING after Restart: %v", err)
		}
	})
}

func TestPauseBlocksCommandsUntilResume(t *testing.T) {
	inProcess(t, func(t *testing.T, mode string) {
		s := startMode(t, mode)
		c := s.Client(t)
		if err := do(t, c, "SET", "k", "v").Error(); err != nil {
			t.Fatal(err)
		}
		s.Pause(t)

		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		err := c.Do(ctx, c.B().Get().Key("k").Build()).Error()
		cancel()
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("GET on a paused server = %v, want context.DeadlineExceeded", err)
		}
		if err := redisserver.Ping(s.Addr, 300*time.Millisecond); err == nil {
			t.Fatal("raw PING answered while paused")
		}

		start := time.Now()
		s.Resume(t)
		t.Logf("%s resume took %v", mode, time.Since(start))
		got, err := do(t, c, "GET", "k").ToString()
		if err != nil || got != "v" {
			t.Fatalf("GET after Resume = %q, %v; want the value kept across the pause", got, err)
		}
	})
}

func TestKillWhilePausedThenRestart(t *testing.T) {
	inProcess(t, func(t *testing.T, mode string) {
		s := startMode(t, mode)
		s.Pause(t)
		s.Kill(t)
		if err := redisserver.Ping(s.Addr, 300*time.Millisecond); err == nil {
			t.Fatal("PING answered after Kill")
		}
		s.Restart(t)
		if err := redisserver.Ping(s.Addr, time.Second); err != nil {
			t.Fatalf("PING after Restart: %v", err)
		}
	})
}

func TestSharedIsOnePerBinary(t *testing.T) {
	a, b := Shared(t), Shared(t)
	if a != b {
		t.Fatalf("Shared returned two servers: %s and %s", a.Addr, b.Addr)
	}
	c := a.Client(t)
	key := "redistest:shared:" + t.Name()
	if err := do(t, c, "SET", key, "1").Error(); err != nil {
		t.Fatal(err)
	}
	if got, err := do(t, c, "GET", key).ToString(); err != nil || got != "1" {
		t.Fatalf("GET = %q, %v", got, err)
	}
}
