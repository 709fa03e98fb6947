package redistest

import (
	"context"
	"fmt"
	"sync"
	"testing"
)

// Server is a Redis 7.0 server on 127.0.0.1 started by [Start] or [Shared].
//
// Its methods are safe for concurrent use; fault helpers run one at a time. A fault
// helper fails the test (t.Fatalf) when it does not reach the state it promises
// within a minute, when called in a state where it makes no sense (Resume on a
// running server, Pause on a killed one), or on a [Shared] server.
type Server struct {
	// Addr is host:port with host 127.0.0.1. It stays the same across Kill and Restart.
	Addr string

	mode   string
	shared bool

	mu    sync.Mutex
	state serverState
	b     backend
}

// backend is what a mode does for a server. Every method waits for the observable
// state it promises (exit seen, engine state, /proc state, PONG).
type backend interface {
	kill(ctx context.Context) error      // SIGKILL, until it no longer runs
	restart(ctx context.Context) error   // start again after kill, until PONG
	pause(ctx context.Context) error     // freeze, until seen frozen
	resume(ctx context.Context) error    // thaw, until PONG
	terminate(ctx context.Context) error // stop in any state and release everything
}

type serverState int

const (
	running serverState = iota
	paused
	killed
	terminated
)

func (s serverState) String() string {
	return [...]string{"running", "paused", "killed", "terminated"}[s]
}

// Mode returns how the server runs: [ModeContainer] or [ModeProcess].
func (s *Server) Mode() string { return s.mode }

// Kill ends the server abruptly: SIGKILL to the process, or the container is
// killed (docker kill). It returns once the server no longer runs; connections to
// Addr are then refused. Valid when running or paused.
func (s *Server) Kill(t testing.TB) {
	t.Helper()
	s.fault(t, "Kill", []serverState{running, paused}, killed, s.b.kill)
}

// Restart starts the server again on the same Addr and returns once it answers
// PING. A running or paused server is killed first. The restarted server is empty:
// nothing is persisted. Clients reconnect by themselves (rueidis does).
func (s *Server) Restart(t testing.TB) {
	t.Helper()
	s.fault(t, "Restart", []serverState{running, paused, killed}, running, func(ctx context.Context) error {
		if s.state != killed {
			if err := s.b.kill(ctx); err != nil {
				return err
			}
			s.state = killed
		}
		return s.b.restart(ctx)
	})
}

// Pause freezes the server (SIGSTOP, or docker pause) and returns once it is seen
// frozen. Connections stay open and new ones may still be accepted by the kernel
// or Docker's proxy, but no command is answered until [Server.Resume]. Valid when
// running.
func (s *Server) Pause(t testing.TB) {
	t.Helper()
	s.fault(t, "Pause", []serverState{running}, paused, s.b.pause)
}

// Resume thaws a paused server (SIGCONT, or docker unpause) and returns once it
// answers PING. Commands sent while paused are then answered. Valid when paused.
func (s *Server) Resume(t testing.TB) {
	t.Helper()
	s.fault(t, "Resume", []serverState{paused}, running, s.b.resume)
}

// fault runs op under the server's lock when the state is one of from, and moves it
// to to on success. It fails t otherwise.
func (s *Server) fault(t testing.TB, name string, from []serverState, to serverState, op func(context.Context) error) {
	t.Helper()
	if s.shared {
		t.Fatalf("redistest: %s on the shared server %s would disturb other tests: use redistest.Start", name, s.Addr)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	ok := false
	for _, st := range from {
		ok = ok || s.state == st
	}
	if !ok {
		t.Fatalf("redistest: %s on %s server %s: only valid when %v", name, s.state, s.Addr, from)
	}
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	if err := op(ctx); err != nil {
		t.Fatalf("redistest: %s %s server %s: %v", name, s.mode, s.Addr, err)
	}
	s.state = to
}

// terminate stops the server in whatever state it is and releases its resources.
// It is idempotent.
func (s *Server) terminate() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.state == terminated {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	s.state = terminated
	if err := s.b.terminate(ctx); err != nil {
		return fmt.Errorf("redistest: stop %s server %s: %w", s.mode, s.Addr, err)
	}
	return nil
}

// newServer starts a server in the mode that EnvMode selects (mode == "") or in the
// given mode, logging the path taken once per mode to tb. testcontainers' log lines
// go to tb while it runs, or to stderr for a shared server, which outlives tb.
func newServer(tb testing.TB, mode string, shared bool) (*Server, error) {
	return newServerWith(tb, mode, shared, ProcessOptions{})
}

// newServerWith is newServer with options for process mode.
func newServerWith(tb testing.TB, mode string, shared bool, popts ProcessOptions) (*Server, error) {
	why := "requested by the harness"
	if mode == "" {
		requested, err := requestedMode()
		if err != nil {
			return nil, err
		}
		mode, why = resolveMode(requested)
	}
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	s := &Server{mode: mode, shared: shared}
	switch mode {
	case ModeProcess:
		p, err := startProcess(ctx, popts)
		if err != nil {
			return nil, err
		}
		s.Addr, s.b = p.addr, p
		announce(tb, mode, why+"; "+p.bin)
	case ModeContainer:
		setEnvDefaults()
		logTo := tb
		if shared {
			logTo = nil
		}
		k, err := startContainer(ctx, newSwitchLogger(logTo))
		if err != nil {
			return nil, err
		}
		s.Addr, s.b = k.addr, k
		announce(tb, mode, why+"; image "+Image)
	default:
		return nil, fmt.Errorf("redistest: unknown mode %q", mode)
	}
	register(s)
	return s, nil
}
