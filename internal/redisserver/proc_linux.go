package redisserver

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"strconv"
	"syscall"
)

// childAttr puts a server in a process group of its own, so that a Ctrl-C in the terminal
// reaches only its parent, which stops it; and has the kernel kill it if the parent dies.
func childAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// Pause freezes the server (SIGSTOP) and returns once /proc shows it stopped. Connections
// stay open and new ones may still be accepted by the kernel, but no command is answered
// until [Process.Resume].
func (p *Process) Pause(ctx context.Context) error {
	return p.signalAndWait(ctx, syscall.SIGSTOP, true)
}

// Resume thaws a paused server (SIGCONT), waits until /proc shows it running, then until
// it answers PING. Commands sent while it was paused are then answered.
func (p *Process) Resume(ctx context.Context) error {
	if err := p.signalAndWait(ctx, syscall.SIGCONT, false); err != nil {
		return err
	}
	return WaitPing(ctx, p.spec.Addr)
}

func (p *Process) signalAndWait(ctx context.Context, sig syscall.Signal, stopped bool) error {
	pid := p.Pid()
	if err := p.cmd.Process.Signal(sig); err != nil {
		return fmt.Errorf("%v to %s %d: %w", sig, p.Program(), pid, err)
	}
	return Poll(ctx, fmt.Sprintf("%s %d stopped=%v", p.Program(), pid, stopped), func() error {
		st, err := procState(pid)
		if err != nil {
			return err
		}
		if (st == 'T') != stopped {
			return fmt.Errorf("state %c", st)
		}
		return nil
	})
}

// procState returns the one-letter state of pid from /proc/PID/stat ('T' = stopped).
func procState(pid int) (byte, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, err
	}
	// The command name in parentheses may hold spaces: the state follows the last ')'.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 || i+2 >= len(b) {
		return 0, fmt.Errorf("unexpected /proc/%d/stat: %q", pid, b)
	}
	return b[i+2], nil
}
