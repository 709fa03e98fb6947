package redisserver

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
	// pollInterval is the pause between two looks at an observable state.
	pollInterval = 10 * time.Millisecond
	// pingTimeout bounds one PING attempt of WaitPing.
	pingTimeout = 500 * time.Millisecond
)

// FreePort returns a TCP port that was free on 127.0.0.1 a moment ago: the kernel picks it
// for a listener that is closed at once. The caller binds it next; a race with another
// process is possible and shows up as a bind error.
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("pick a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// Ping sends one inline PING to addr on a new connection and returns nil only when the
// reply is +PONG within timeout (a -LOADING reply or a closed connection is an error).
func Ping(addr string, timeout time.Duration) error {
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

// WaitPing polls addr until it answers PING with PONG, and returns an error when ctx ends
// first.
func WaitPing(ctx context.Context, addr string) error {
	return Poll(ctx, "PONG from "+addr, func() error { return Ping(addr, pingTimeout) })
}

// Poll calls check every 10 ms until it returns nil, and returns nil. When check returns
// an error made by [GiveUp], Poll returns that error's cause at once. When ctx ends first it
// returns an error naming what was awaited and check's last error.
func Poll(ctx context.Context, what string, check func() error) error {
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
			return fmt.Errorf("waiting for %s: %w (last check: %v)", what, ctx.Err(), last)
		case <-time.After(pollInterval):
		}
	}
}

// final wraps an error after which polling is pointless.
type final struct{ error }

// GiveUp marks err as final for [Poll]: waiting longer cannot make the check pass.
func GiveUp(err error) error { return final{err} }
