package redisserver

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
)

// portAttempts is how many free ports [LaunchOnFreePort] tries when the port it picked is
// taken before the server binds it.
const portAttempts = 5

// stderrFile is the file in Spec.Dir that takes a server's stdout and stderr.
const stderrFile = "redis.stderr"

// logTailLines is how many lines of a server's log [Process.LogTail] returns.
const logTailLines = 15

// ErrNoRedisServer is wrapped by the error of [StartProcess] when there is no server
// program to run: redis-server is not in PATH, or [EnvServer] names no program.
var ErrNoRedisServer = errors.New("no redis-server to run")

var errExited = errors.New("exited")

// Spec is how to run one server process (redis-server, or redis-server --sentinel).
type Spec struct {
	// Addr is the 127.0.0.1:port the server listens on; a start waits for PONG there.
	Addr string
	// Dir is the working directory. The server must log to Dir/redis.log, which error
	// messages and [Process.LogTail] read; its stdout and stderr go to Dir/redis.stderr,
	// whose end the error of a server that exits at start carries (a server refuses an
	// unknown option there, before it opens its log).
	Dir string
	// Argv is the program and its arguments.
	Argv []string
	// Env is added to this process's environment.
	Env []string
	// Pidfile, when set, is the file where the server writes its pid: a start then also
	// waits until it holds the child's pid (so that a wrapper such as faketime has exec'd
	// redis-server).
	Pidfile string
}

// Process is a Redis server running as a child process in the foreground (so that its exit
// is seen), in a process group of its own and, on Linux, with SIGKILL as parent-death
// signal (a crashed parent leaves no server behind).
//
// Its methods are not safe for concurrent use.
type Process struct {
	spec   Spec
	ownDir bool // Stop removes spec.Dir

	cmd  *exec.Cmd     // the running or last started server
	done chan struct{} // closed when cmd has exited
}

// ProcessOptions adjust the server of [StartProcess].
type ProcessOptions struct {
	// Args are extra redis-server arguments, placed after the defaults so that they
	// override them (e.g. "--appendonly", "yes").
	Args []string
	// Wrapper is a command, with its arguments, that runs redis-server (e.g. faketime).
	Wrapper []string
	// Env is added to the server's environment.
	Env []string
}

// StartProcess starts the server program ([ServerProgram]: [EnvServer], else redis-server
// from PATH) on a free loopback port, without persistence
// (--save "" --appendonly no, unless opts.Args says otherwise), in a new temporary
// directory that [Process.Stop] removes, and returns once it answers PING and has written
// its pidfile. The error wraps [ErrNoRedisServer] when there is no program to run, and
// carries the end of the server's log when it did not start.
func StartProcess(ctx context.Context, opts ProcessOptions) (*Process, error) {
	bin, err := ServerProgram()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "goredisson-redis-")
	if err != nil {
		return nil, err
	}
	p, err := LaunchOnFreePort(ctx, FreePort, func(port int) (Spec, error) {
		pidfile := filepath.Join(dir, "redis.pid")
		argv := append(append([]string{}, opts.Wrapper...), bin,
			"--port", strconv.Itoa(port),
			"--bind", "127.0.0.1",
			"--save", "",
			"--appendonly", "no",
			"--daemonize", "no",
			"--dir", dir,
			"--logfile", filepath.Join(dir, "redis.log"),
			"--pidfile", pidfile,
		)
		return Spec{
			Addr:    net.JoinHostPort("127.0.0.1", strconv.Itoa(port)),
			Dir:     dir,
			Argv:    append(argv, opts.Args...),
			Env:     opts.Env,
			Pidfile: pidfile,
		}, nil
	})
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	p.ownDir = true
	return p, nil
}

// LaunchOnFreePort launches the server that spec describes for a port that pick returns,
// and tries again with another port, up to 5 ports, when the first was taken between pick
// and bind ("Address already in use" in the server's log). Other failures end it at once.
func LaunchOnFreePort(ctx context.Context, pick func() (int, error), spec func(port int) (Spec, error)) (*Process, error) {
	for range portAttempts {
		port, err := pick()
		if err != nil {
			return nil, err
		}
		s, err := spec(port)
		if err != nil {
			return nil, err
		}
		p, err := Launch(ctx, s)
		if err == nil {
			return p, nil
		}
		if ctx.Err() != nil || !strings.Contains(logTail(s.Dir), "Address already in use") {
			return nil, err
		}
	}
	return nil, fmt.Errorf("no free loopback port for the server after %d attempts", portAttempts)
}

// Launch starts the server that spec describes and returns once it answers PING on
// spec.Addr (and spec.Pidfile holds its pid, when set). On failure the server is killed
// and the error carries the end of its log.
func Launch(ctx context.Context, spec Spec) (*Process, error) {
	p := &Process{spec: spec}
	if err := p.start(ctx); err != nil {
		return nil, err
	}
	return p, nil
}

// start launches p.spec and waits until it answers PING.
func (p *Process) start(ctx context.Context) error {
	argv := p.spec.Argv
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), p.spec.Env...)
	cmd.Dir = p.spec.Dir
	cmd.SysProcAttr = childAttr()
	out, err := os.Create(filepath.Join(p.spec.Dir, stderrFile))
	if err != nil {
		return err
	}
	defer out.Close() // the child has its own copy
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start %s: %w", argv[0], err)
	}
	done := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(done)
	}()
	p.cmd, p.done = cmd, done

	err = Poll(ctx, p.Program()+" on "+p.spec.Addr, func() error {
		if p.exited() {
			return GiveUp(errExited)
		}
		if err := Ping(p.spec.Addr, pingTimeout); err != nil {
			return err
		}
		return p.checkPidfile()
	})
	if err != nil {
		_ = p.Kill(context.WithoutCancel(ctx))
		if errors.Is(err, errExited) {
			return fmt.Errorf("%s on %s exited at start; log:\n%s\nstderr:\n%s", p.Program(), p.spec.Addr, p.LogTail(),
				tail(filepath.Join(p.spec.Dir, stderrFile)))
		}
		return fmt.Errorf("%w; log:\n%s", err, p.LogTail())
	}
	return nil
}

// checkPidfile returns nil when there is no pidfile to check or when it holds the pid of
// the running child.
func (p *Process) checkPidfile() error {
	if p.spec.Pidfile == "" {
		return nil
	}
	b, err := os.ReadFile(p.spec.Pidfile)
	if err != nil {
		return err
	}
	if got := strings.TrimSpace(string(b)); got != strconv.Itoa(p.cmd.Process.Pid) {
		return fmt.Errorf("pidfile holds %q, child is %d", got, p.cmd.Process.Pid)
	}
	return nil
}

// Addr returns the 127.0.0.1:port the server listens on. It stays the same across Kill
// and Restart.
func (p *Process) Addr() string { return p.spec.Addr }

// Program returns the base name of the program run (redis-server, or the wrapper's).
func (p *Process) Program() string { return filepath.Base(p.spec.Argv[0]) }

// Path returns the path of the program run.
func (p *Process) Path() string { return p.spec.Argv[0] }

// Pid returns the pid of the running or last started server.
func (p *Process) Pid() int { return p.cmd.Process.Pid }

// LogTail returns the last 15 lines of Dir/redis.log, for error messages.
func (p *Process) LogTail() string { return logTail(p.spec.Dir) }

func logTail(dir string) string { return tail(filepath.Join(dir, "redis.log")) }

// tail returns the last 15 lines of the file at path, or why there are none.
func tail(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return "(none: " + err.Error() + ")"
	}
	lines := bytes.Split(bytes.TrimSpace(b), []byte("\n"))
	if len(lines) > logTailLines {
		lines = lines[len(lines)-logTailLines:]
	}
	return string(bytes.Join(lines, []byte("\n")))
}

// exited reports whether the last started server has exited.
func (p *Process) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// Kill sends SIGKILL (which also ends a paused server) and returns once the child has
// exited; connections to Addr are then refused. It returns nil at once when the server has
// already exited.
func (p *Process) Kill(ctx context.Context) error {
	if p.exited() {
		return nil
	}
	if err := p.cmd.Process.Kill(); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("SIGKILL %s %d: %w", p.Program(), p.Pid(), err)
	}
	select {
	case <-p.done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("%s %d still alive after SIGKILL: %w", p.Program(), p.Pid(), ctx.Err())
	}
}

// Restart kills the server if it still runs, starts it again with the same arguments on
// the same address and directory, and returns once it answers PING. The restarted server
// holds only what it persisted (by default nothing).
func (p *Process) Restart(ctx context.Context) error {
	if err := p.Kill(ctx); err != nil {
		return err
	}
	return p.start(ctx)
}

// Stop kills the server if it runs and, when [StartProcess] made its directory, removes
// that directory. Calling it again is harmless.
func (p *Process) Stop(ctx context.Context) error {
	err := p.Kill(ctx)
	if p.ownDir {
		err = errors.Join(err, os.RemoveAll(p.spec.Dir))
	}
	return err
}
