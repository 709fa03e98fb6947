package redisserver

import (
	"context"
	"fmt"
)

// Options say how [Start] runs the server.
type Options struct {
	// Mode is [ModeContainer], [ModeProcess] or [ModeAuto]; empty means the mode that
	// [EnvMode] asks for (see [RequestedMode]).
	Mode string
	// FallBack, in auto mode, runs a process also when Docker and the image are there but
	// the container does not start (without it, that is an error).
	FallBack bool
	// Process adjusts a redis-server process.
	Process ProcessOptions
	// Container adjusts a container.
	Container ContainerOptions
}

// Server is a Redis server on 127.0.0.1 started by [Start], running in a container or as a
// child process.
//
// Its methods are not safe for concurrent use.
type Server struct {
	// Addr is host:port with host 127.0.0.1. It stays the same across Kill and Restart.
	Addr string
	// Mode is how the server runs: [ModeContainer] or [ModeProcess].
	Mode string
	// How says, for a log, how the server runs and why in that mode, with the image or
	// the path of redis-server.
	How string

	b interface {
		Kill(context.Context) error
		Restart(context.Context) error
		Pause(context.Context) error
		Resume(context.Context) error
		Stop(context.Context) error
	}
	describe func() string
}

// UnavailableError is the error of [Start] when no server could start: it holds the reason
// of each way tried.
type UnavailableError struct {
	// Container is why no container runs; nil when container mode was not tried.
	Container error
	// Process is why no redis-server process runs; nil when process mode was not tried.
	Process error
}

func (e *UnavailableError) Error() string {
	switch {
	case e.Container == nil:
		return fmt.Sprintf("no redis-server process: %v", e.Process)
	case e.Process == nil:
		return fmt.Sprintf("no Redis container: %v", e.Container)
	}
	return fmt.Sprintf("no Redis container: %v; and no redis-server process: %v", e.Container, e.Process)
}

// Unwrap returns the reasons.
func (e *UnavailableError) Unwrap() []error {
	var errs []error
	for _, err := range []error{e.Container, e.Process} {
		if err != nil {
			errs = append(errs, err)
		}
	}
	return errs
}

// Start starts a server in the mode opts ask for (see the package doc) and returns once it
// answers PING. A bad [EnvMode] value is an error naming it; when no server can start the
// error is an [*UnavailableError]. ctx bounds the start only.
func Start(ctx context.Context, opts Options) (*Server, error) {
	mode, why := opts.Mode, "requested by the caller"
	if mode == "" {
		var err error
		if mode, err = RequestedMode(); err != nil {
			return nil, err
		}
		why = EnvMode + "=" + mode
	}
	var containerErr error
	switch mode {
	case ModeContainer:
		k, err := startContainer(ctx, opts.Container)
		if err != nil {
			return nil, &UnavailableError{Container: err}
		}
		return containerServer(k, why), nil
	case ModeProcess:
	case ModeAuto:
		var c Containers
		if c, containerErr = containers(); containerErr != nil {
			why = fmt.Sprintf("auto: no container because %v", containerErr)
			break
		}
		k, err := c.Start(ctx, opts.Container)
		if err == nil {
			return containerServer(k, "auto: containers are ready"), nil
		}
		if !opts.FallBack || ctx.Err() != nil {
			return nil, &UnavailableError{Container: err}
		}
		containerErr = err
		why = fmt.Sprintf("auto: the container did not start (%v)", err)
	default:
		return nil, fmt.Errorf("unknown mode %q: want %q, %q or %q", mode, ModeContainer, ModeProcess, ModeAuto)
	}
	p, err := StartProcess(ctx, opts.Process)
	if err != nil {
		return nil, &UnavailableError{Container: containerErr, Process: err}
	}
	return &Server{
		Addr: p.Addr(), Mode: ModeProcess, How: why + "; " + p.Path(), b: p,
		describe: func() string { return fmt.Sprintf("%s pid %d", p.Program(), p.Pid()) },
	}, nil
}

// containerServer is the Server of a started container.
func containerServer(k Container, why string) *Server {
	return &Server{Addr: k.Addr(), Mode: ModeContainer, How: why + "; " + k.Describe(), b: k, describe: k.Describe}
}

// Describe names what runs, for a person: "container 0123456789ab of
// goredisson/redis:7.0.15", or "redis-server pid 1234" (the pid of the last start).
func (s *Server) Describe() string { return s.describe() }

// Kill ends the server abruptly (SIGKILL to the process; docker kill) and returns once it no
// longer runs; connections to Addr are then refused. It returns nil when the server does
// not run.
func (s *Server) Kill(ctx context.Context) error { return s.b.Kill(ctx) }

// Restart kills the server if it runs, starts it again on the same Addr and returns once
// it answers PING. The restarted server is empty unless the process options made it
// persist. Clients reconnect by themselves (rueidis does).
func (s *Server) Restart(ctx context.Context) error { return s.b.Restart(ctx) }

// Pause freezes the server (SIGSTOP; docker pause) and returns once it is seen frozen.
// Connections stay open and new ones may still be accepted by the kernel or Docker's
// proxy, but no command is answered until Resume. A process can be paused on Linux only.
func (s *Server) Pause(ctx context.Context) error { return s.b.Pause(ctx) }

// Resume thaws a paused server (SIGCONT; docker unpause) and returns once it answers
// PING. Commands sent while it was paused are then answered.
func (s *Server) Resume(ctx context.Context) error { return s.b.Resume(ctx) }

// Stop ends the server and releases what it holds: the container is removed; the process
// is killed and its directory removed.
func (s *Server) Stop(ctx context.Context) error { return s.b.Stop(ctx) }
