package redistest

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"time"
)

const (
	// opTimeout bounds each start, restart, kill, pause and resume.
	opTimeout = 60 * time.Second
	// pollInterval is the pause between two looks at an observable state.
	pollInterval = 10 * time.Millisecond
	// pingTimeout bounds one PING attempt of waitPing.
	pingTimeout = 500 * time.Millisecond
)

// freePort returns a TCP port that was free on 127.0.0.1 a moment ago: the kernel picks
// it for a listener that is closed at once. The caller binds it next; a race with
// another process is possible and shows up as a bind error.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("redistest: pick a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// ping sends one inline PING to addr on a new connection and returns nil only when
// the reply is +PONG within timeout (a -LOADING reply or a closed connection is an error).
func ping(addr string, timeout time.Duration) error {
	conn, err := net.DialTimeout("tcp", addr, timeout)
	if err != nil {
		return err
	}
	defer conn.Close()
	if err := conn.SetDeadline(time.Now().Add(timeout)); err != nil {
		return err
	}
	if _, err := conn.Write([]byte("PING\r\n")); err != nil {
		return err
	}
	line, err := bufio.NewReader(conn).ReadString('\n')
	if err != nil {
		return err
	}
	if line = strings.TrimSpace(line); line != "+PONG" {
		return fmt.Errorf("PING replied %q", line)
	}
	return nil
}

// poll calls check every pollInterval until it returns nil, returning nil. When check
// returns an error made by [giveUp], poll returns that error at once. When ctx ends
// first it returns an error naming what was awaited and check's last error.
func poll(ctx context.Context, what string, check func() error) error {
	var last error
	for {
		if last = check(); last == nil {
			return nil
		}
		var g final
		if errors.As(last, &g) {
			return g.error
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("redistest: waiting for %s: %w (last check: %v)", what, ctx.Err(), last)
		case <-time.After(pollInterval):
		}
	}
}

// final wraps an error after which polling is pointless.
type final struct{ error }

// giveUp marks err as final for [poll]: waiting longer cannot make the check pass.
func giveUp(err error) error { return final{err} }

// waitPing polls addr until it answers PING with PONG or ctx ends.
func waitPing(ctx context.Context, addr string) error {
	return poll(ctx, "PONG from "+addr, func() error { return ping(addr, pingTimeout) })
}
