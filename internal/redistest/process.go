package redistest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// portAttempts is how many free ports a first process start tries when the port it
// picked is taken before redis-server binds it.
const portAttempts = 5

// process runs redis-server as a child of the test binary, in the foreground (so the
// harness sees it exit) and with SIGKILL as parent-death signal (so a crashed test
// binary leaves no server behind).
type process struct {
	bin  string // path of redis-server
	dir  string // working dir: redis.log, redis.pid
	addr string // 127.0.0.1:port

	opts ProcessOptions

	cmd  *exec.Cmd     // the running or last server
	done chan struct{} // closed when cmd has exited
}

// ProcessOptions adjust a server started by [StartProcess].
type ProcessOptions struct {
	// Args are extra redis-server arguments, placed after the defaults so that they
	// override them (e.g. "--appendonly", "yes").
	Args []string
	// Wrapper is a command, with its arguments, that runs redis-server (e.g. faketime).
	Wrapper []string
	// Env is added to the server's environment.
	Env []string
}

// startProcess starts redis-server on a free loopback port in a new temporary
// directory and returns once it answers PING.
func startProcess(ctx context.Context, opts ProcessOptions) (*process, error) {
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		return nil, fmt.Errorf("redistest: process mode needs redis-server in PATH (apt-get install -y redis-server): %w", err)
	}
	dir, err := os.MkdirTemp("", "redistest-")
	if err != nil {
		return nil, fmt.Errorf("redistest: %w", err)
	}
	p := &process{bin: bin, dir: dir, opts: opts}
	for range portAttempts {
		port, err := freePort()
		if err != nil {
			_ = os.RemoveAll(dir)
			return nil, err
		}
		p.addr = net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
		if err = p.start(ctx); err == nil {
			return p, nil
		}
		if !strings.Contains(p.logTail(), "Address already in use") {
			_ = os.RemoveAll(dir)
			return nil, err
		}
	}
	_ = os.RemoveAll(dir)
	return nil, fmt.Errorf("redistest: no free port for redis-server after %d attempts", portAttempts)
}

// start launches redis-server on p.addr and waits until it answers PING and has
// written its pidfile. On failure the process is killed and the error carries the
// end of its log.
func (p *process) start(ctx context.Context) error {
	_, port, _ := net.SplitHostPort(p.addr)
	argv := append(append([]string{}, p.opts.Wrapper...), p.bin,
		"--port", port,
		"--bind", "127.0.0.1",
		"--save", "",
		"--appendonly", "no",
		"--daemonize", "no",
		"--dir", p.dir,
		"--logfile", filepath.Join(p.dir, "redis.log"),
		"--pidfile", filepath.Join(p.dir, "redis.pid"),
	)
	argv = append(argv, p.opts.Args...)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), p.opts.Env...)
	cmd.Dir = p.dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("redistest: start %s: %w", p.bin, err)
	}
	done := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(done)
	}()
	p.cmd, p.done = cmd, done

	err := poll(ctx, "redis-server on "+p.addr, func() error {
		select {
		case <-done:
			return giveUp(errExited)
		default:
		}
		if err := ping(p.addr, pingTimeout); err != nil {
			return err
		}
		return p.checkPidfile()
	})
	if err != nil {
		_ = p.kill(context.WithoutCancel(ctx))
		if errors.Is(err, errExited) {
			return fmt.Errorf("redistest: redis-server on %s exited at start; log:\n%s", p.addr, p.logTail())
		}
		return fmt.Errorf("%w; log:\n%s", err, p.logTail())
	}
	return nil
}

var errExited = errors.New("redis-server exited")

// checkPidfile returns nil when redis.pid holds the pid of the running child.
func (p *process) checkPidfile() error {
	b, err := os.ReadFile(filepath.Join(p.dir, "redis.pid"))
	if err != nil {
		return err
	}
	if got := strings.TrimSpace(string(b)); got != strconv.Itoa(p.cmd.Process.Pid) {
		return fmt.Errorf("pidfile holds %q, child is %d", got, p.cmd.Process.Pid)
	}
	return nil
}

// logTail returns the last lines of redis.log, for error messages.
func (p *process) logTail() string {
	b, err := os.ReadFile(filepath.Join(p.dir, "redis.log"))
	if err != nil {
		return "(no log: " + err.Error() + ")"
	}
	lines := bytes.Split(bytes.TrimSpace(b), []byte("\n"))
	if len(lines) > 15 {
		lines = lines[len(lines)-15:]
	}
	return string(bytes.Join(lines, []byte("\n")))
}

// exited reports whether the last started server has exited.
func (p *process) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// kill sends SIGKILL (it also ends a stopped process) and waits until the child exits.
func (p *process) kill(ctx context.Context) error {
	if p.exited() {
		return nil
	}
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("redistest: SIGKILL redis-server %d: %w", p.cmd.Process.Pid, err)
	}
	select {
	case <-p.done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("redistest: redis-server %d still alive after SIGKILL: %w", p.cmd.Process.Pid, ctx.Err())
	}
}

// restart starts a new server on the same address and directory.
func (p *process) restart(ctx context.Context) error { return p.start(ctx) }

// pause sends SIGSTOP and waits until /proc shows the process stopped.
func (p *process) pause(ctx context.Context) error {
	return p.signalAndWait(ctx, syscall.SIGSTOP, true)
}

// resume sends SIGCONT, waits until /proc shows the process running again, then
// until it answers PING.
func (p *process) resume(ctx context.Context) error {
	if err := p.signalAndWait(ctx, syscall.SIGCONT, false); err != nil {
		return err
	}
	return waitPing(ctx, p.addr)
}

func (p *process) signalAndWait(ctx context.Context, sig syscall.Signal, stopped bool) error {
	pid := p.cmd.Process.Pid
	if err := p.cmd.Process.Signal(sig); err != nil {
		return fmt.Errorf("redistest: %v to redis-server %d: %w", sig, pid, err)
	}
	return poll(ctx, fmt.Sprintf("redis-server %d stopped=%v", pid, stopped), func() error {
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

// terminate kills the server if it runs and removes its directory.
func (p *process) terminate(ctx context.Context) error {
	err := p.kill(ctx)
	return errors.Join(err, os.RemoveAll(p.dir))
}
