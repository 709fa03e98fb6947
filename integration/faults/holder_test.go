package faults

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/require"

	"github.com/goredisson/goredisson/rlock"
)

// The holder is this test binary run again as a separate process (env holderEnv set): it
// takes a watchdog lock, takes a fencing token (with a Lock, an INCR of a counter of its
// own; with a FencedLock, the token of the acquisition), and then answers commands on
// stdin: "write" (a fenced write with its token) and "unlock". It reports on stdout:
// "locked <token>", "lost <cause>", "write ok|rejected", "unlock ok|<error>".
const holderEnv = "GOREDISSON_FAULT_HOLDER" // "<redis addr> <lock name> <watchdog ms> lock|fenced"

func runHolder(spec string) int {
	var addr, name, kind string
	var watchdogMs int64
	if _, err := fmt.Sscan(spec, &addr, &name, &watchdogMs, &kind); err != nil {
		fmt.Println("error", err)
		return 2
	}
	ctx := rlock.NewOwner(context.Background())
	rc, c, err := holderClient(ctx, addr, rlock.Options{WatchdogTimeout: time.Duration(watchdogMs) * time.Millisecond})
	if err != nil {
		fmt.Println("error", err)
		return 1
	}
	defer rc.Close()
	defer c.Close()
	var (
		tok    int64
		held   context.Context
		stop   context.CancelFunc
		unlock func(context.Context) error
	)
	if kind == "fenced" {
		f := c.NewFencedLock(name)
		if tok, err = f.Lock(ctx); err == nil {
			held, stop, _, err = f.Held(ctx)
		}
		unlock = f.Unlock
	} else {
		l := c.NewLock(name)
		if err = l.Lock(ctx); err == nil {
			tok, err = token(ctx, rc, name)
		}
		if err == nil {
			held, stop, err = l.Held(ctx)
		}
		unlock = l.Unlock
	}
	if err != nil {
		fmt.Println("error", err)
		return 1
	}
	defer stop()
	fmt.Println("locked", tok)
	go func() {
		<-held.Done()
		fmt.Println("lost", strings.ReplaceAll(context.Cause(held).Error(), " ", "_"))
	}()
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		switch in.Text() {
		case "write":
			ok, err := write(ctx, rc, name, tok, "holder")
			switch {
			case err != nil:
				fmt.Println("write", err)
			case ok:
				fmt.Println("write ok")
			default:
				fmt.Println("write rejected")
			}
		case "unlock":
			if err := unlock(ctx); err != nil {
				fmt.Println("unlock", strings.ReplaceAll(err.Error(), " ", "_"))
			} else {
				fmt.Println("unlock ok")
			}
		}
	}
	return 0
}

// holderClient connects a holder process to the Redis at addr.
func holderClient(ctx context.Context, addr string, opts rlock.Options) (rueidis.Client, *rlock.Client, error) {
	rc, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{addr}})
	if err != nil {
		return nil, nil, err
	}
	c, err := rlock.New(ctx, rc, opts)
	if err != nil {
		rc.Close()
		return nil, nil, err
	}
	return rc, c, nil
}

// holderProc is a running holder process.
type holderProc struct {
	t     *testing.T
	cmd   *exec.Cmd
	stdin *os.File
	lines chan string
	token int64
}

// startHolder runs a holder process for lock name on addr and waits until it holds the lock.
func startHolder(t *testing.T, addr, name string, watchdog time.Duration) *holderProc {
	return startHolderOf(t, "lock", addr, name, watchdog)
}

// startHolderOf is startHolder for a holder of kind "lock" (a Lock) or "fenced" (a
// FencedLock).
func startHolderOf(t *testing.T, kind, addr, name string, watchdog time.Duration) *holderProc {
	exe, err := os.Executable()
	require.NoError(t, err)
	cmd := exec.Command(exe, "-test.run=^$")
	cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%s %s %d %s", holderEnv, addr, name, watchdog.Milliseconds(), kind))
	stdin, w, err := os.Pipe()
	require.NoError(t, err)
	cmd.Stdin = stdin
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	cmd.Stderr = os.Stderr
	require.NoError(t, cmd.Start())
	stdin.Close()
	h := &holderProc{t: t, cmd: cmd, stdin: w, lines: make(chan string, 16)}
	go func() {
		s := bufio.NewScanner(out)
		for s.Scan() {
			h.lines <- s.Text()
		}
		close(h.lines)
	}()
	t.Cleanup(func() {
		w.Close()
		cmd.Process.Signal(syscall.SIGCONT)
		cmd.Process.Kill()
		cmd.Wait()
	})
	line := h.next("locked", 20*time.Second)
	h.token, err = strconv.ParseInt(strings.TrimPrefix(line, "locked "), 10, 64)
	require.NoError(t, err)
	return h
}

// next returns the holder's next line, which must start with prefix.
func (h *holderProc) next(prefix string, within time.Duration) string {
	h.t.Helper()
	select {
	case line, ok := <-h.lines:
		require.True(h.t, ok, "holder exited before %q", prefix)
		require.True(h.t, strings.HasPrefix(line, prefix), "holder said %q, want %q", line, prefix)
		return line
	case <-time.After(within):
		h.t.Fatalf("holder said nothing starting with %q within %v", prefix, within)
		return ""
	}
}

func (h *holderProc) send(cmd string) {
	_, err := fmt.Fprintln(h.stdin, cmd)
	require.NoError(h.t, err)
}

func (h *holderProc) signal(sig syscall.Signal) {
	require.NoError(h.t, h.cmd.Process.Signal(sig))
}
