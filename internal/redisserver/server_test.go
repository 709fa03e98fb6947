//go:build unix

package redisserver

import (
	"context"
	"errors"
	"net"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// needRedisServer skips t when redis-server is not in PATH, unless CI is set: then it
// fails.
func needRedisServer(t *testing.T) {
	t.Helper()
	_, err := exec.LookPath("redis-server")
	if err == nil {
		return
	}
	if os.Getenv("CI") != "" {
		t.Fatalf("process mode must run here: %v", err)
	}
	t.Skipf("process mode unavailable: %v", err)
}

func startCtx(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}

func TestProcessServerStopLeavesNothing(t *testing.T) {
	needRedisServer(t)
	ctx := startCtx(t)
	s, err := Start(ctx, Options{Mode: ModeProcess})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s on %s (%s)", s.Describe(), s.Addr, s.How)
	if s.Mode != ModeProcess || !strings.HasPrefix(s.How, "requested by the caller; /") {
		t.Errorf("Mode %q, How %q", s.Mode, s.How)
	}
	if host, _, err := net.SplitHostPort(s.Addr); err != nil || host != "127.0.0.1" {
		t.Errorf("Addr = %q, want host 127.0.0.1 (%v)", s.Addr, err)
	}
	m := regexp.MustCompile(`^redis-server pid (\d+)$`).FindStringSubmatch(s.Describe())
	if m == nil {
		t.Fatalf("Describe() = %q, want \"redis-server pid N\"", s.Describe())
	}
	pid, _ := strconv.Atoi(m[1])
	dir := s.b.(*Process).spec.Dir
	if err := Ping(s.Addr, time.Second); err != nil {
		t.Fatalf("PING: %v", err)
	}
	if err := s.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
		t.Errorf("pid %d after Stop: kill 0 = %v, want ESRCH", pid, err)
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("directory %s after Stop: %v, want it removed", dir, err)
	}
	if err := Ping(s.Addr, 300*time.Millisecond); err == nil {
		t.Error("PING answered after Stop")
	}
}

func TestNoRedisServerInPath(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	t.Setenv(EnvServer, "")
	_, err := Start(startCtx(t), Options{Mode: ModeProcess})
	var ue *UnavailableError
	if !errors.As(err, &ue) || ue.Container != nil || !errors.Is(ue.Process, ErrNoRedisServer) {
		t.Fatalf("Start without redis-server = %v, want an UnavailableError with ErrNoRedisServer only", err)
	}
}

func TestLaunchOnFreePortSkipsATakenPort(t *testing.T) {
	needRedisServer(t)
	bin, _ := exec.LookPath("redis-server")
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	ports := []int{taken.Addr().(*net.TCPAddr).Port}
	dir := t.TempDir()
	ctx := startCtx(t)
	p, err := LaunchOnFreePort(ctx, func() (int, error) {
		if len(ports) > 0 {
			port := ports[0]
			ports = ports[1:]
			return port, nil
		}
		return FreePort()
	}, func(port int) (Spec, error) {
		return Spec{
			Addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)),
			Dir:  dir,
			Argv: []string{bin, "--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "",
				"--logfile", dir + "/redis.log"},
		}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Stop(context.WithoutCancel(ctx))
	if p.Addr() == taken.Addr().String() {
		t.Fatalf("launched on the taken address %s", p.Addr())
	}
	if err := Ping(p.Addr(), time.Second); err != nil {
		t.Fatalf("PING %s: %v", p.Addr(), err)
	}
}
