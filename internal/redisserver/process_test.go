package redisserver

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestStartProcessSaysWhyTheServerExited: a server that refuses its command line exits
// before it opens its log; the error carries what it printed.
func TestStartProcessSaysWhyTheServerExited(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	p, err := StartProcess(ctx, ProcessOptions{Args: []string{"--no-such-option", "1"}})
	if err == nil {
		_ = p.Stop(ctx)
		t.Fatal("the server started with an unknown option")
	}
	if !strings.Contains(err.Error(), "exited at start") || !strings.Contains(err.Error(), "no-such-option") {
		t.Fatalf("error does not carry the server's refusal: %v", err)
	}
}

// TestStartProcessRunsEnvServer: GOREDISSON_REDIS_SERVER names the program that runs.
func TestStartProcessRunsEnvServer(t *testing.T) {
	bin, err := ServerProgram()
	if err != nil {
		t.Fatal(err)
	}
	want, err := ProgramBuild(bin)
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv(EnvServer, bin)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	p, err := StartProcess(ctx, ProcessOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = p.Stop(ctx) }()
	if p.Path() != bin {
		t.Errorf("Path() = %q, want %q", p.Path(), bin)
	}
	if got, err := askBuild(p.Addr(), 5*time.Second); err != nil || got != want {
		t.Errorf("INFO server: %v, %v; want %v", got, err, want)
	}

	t.Setenv(EnvServer, "/nonexistent/redis-server")
	if p, err := StartProcess(ctx, ProcessOptions{}); err == nil {
		_ = p.Stop(ctx)
		t.Fatal("StartProcess ran something for a program that does not exist")
	}
}

// askBuild sends INFO server to addr on a connection of its own and returns the build it
// names. A server that requires a password answers -NOAUTH, which is the error.
func askBuild(addr string, timeout time.Duration) (Build, error) {
	conn, err := net.DialTimeout("tcp", addr, timeout)
	if err != nil {
		return Build{}, err
	}
	defer conn.Close()
	if err := conn.SetDeadline(time.Now().Add(timeout)); err != nil {
		return Build{}, err
	}
	if _, err := conn.Write([]byte("INFO server\r\n")); err != nil {
		return Build{}, err
	}
	r := bufio.NewReader(conn)
	head, err := r.ReadString('\n')
	if err != nil {
		return Build{}, err
	}
	n, err := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(head, "$")))
	if !strings.HasPrefix(head, "$") || err != nil || n < 0 {
		return Build{}, fmt.Errorf("INFO server replied %q", strings.TrimSpace(head))
	}
	body := make([]byte, n)
	if _, err := io.ReadFull(r, body); err != nil {
		return Build{}, err
	}
	return ParseInfoServer(string(body))
}
