package redistest

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/goredisson/goredisson/internal/redisserver"
)

// opTimeout bounds each start, restart, kill, pause, resume and stop of a [Server].
const opTimeout = 60 * time.Second

// Server is a Redis 7.0 server on 127.0.0.1 started by [Start] or [Shared].
//
// Its methods are safe for concurrent use; fault helpers run one at a time. A fault
// helper fails the test (t.Fatalf) when it does not reach the state it promises
// within a minute, when called in a state where it makes no sense (Resume on a
// running server, Pause on a killed one), or on a [Shared] server.
type Server struct {
	// Addr is host:port with host 127.0.0.1. It stays the same across Kill and Restart.
	Addr string

	shared bool
	log    *switchLogger // the container backend's lines about this server

	mu    sync.Mutex
	state serverState
	srv   *redisserver.Server
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

// ProcessOptions adjust a server started by [StartProcess]: extra redis-server arguments,
// a wrapper command (e.g. faketime) and environment.
type ProcessOptions = redisserver.ProcessOptions

// Mode returns how the server runs: [ModeContainer] or [ModeProcess].
func (s *Server) Mode() string { return s.srv.Mode }

// Kill ends the server abruptly: SIGKILL to the process, or the container is
// killed (docker kill). It returns once the server no longer runs; connections to
// Addr are then refused. Valid when running or paused.
func (s *Server) Kill(t testing.TB) {
	t.Helper()
	s.fault(t, "Kill", []serverState{running, paused}, killed, s.srv.Kill)
}

// Restart starts the server again on the same Addr and returns once it answers
// PING. A running or paused server is killed first. The restarted server is empty:
// nothing is persisted. Clients reconnect by themselves (rueidis does).
func (s *Server) Restart(t testing.TB) {
	t.Helper()
	s.fault(t, "Restart", []serverState{running, paused, killed}, running, s.srv.Restart)
}

// Pause freezes the server (SIGSTOP, or docker pause) and returns once it is seen
// frozen. Connections stay open and new ones may still be accepted by the kernel
// or Docker's proxy, but no command is answered until [Server.Resume]. Valid when
// running.
func (s *Server) Pause(t testing.TB) {
	t.Helper()
	s.fault(t, "Pause", []serverState{running}, paused, s.srv.Pause)
}

// Resume thaws a paused server (SIGCONT, or docker unpause) and returns once it
// answers PING. Commands sent while paused are then answered. Valid when paused.
func (s *Server) Resume(t testing.TB) {
	t.Helper()
	s.fault(t, "Resume", []serverState{paused}, running, s.srv.Resume)
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
	if !slices.Contains(from, s.state) {
		t.Fatalf("redistest: %s on %s server %s: only valid when %v", name, s.state, s.Addr, from)
	}
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	if err := op(ctx); err != nil {
		t.Fatalf("redistest: %s %s server %s: %v", name, s.Mode(), s.Addr, err)
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
	err := s.srv.Stop(ctx)
	s.log.detach()
	if err != nil {
		return fmt.Errorf("redistest: stop %s server %s: %w", s.Mode(), s.Addr, err)
	}
	return nil
}

// newServer starts a server in the mode that EnvMode selects (mode == "") or in the
// given mode, with options for process mode, and logs the path taken once per distinct
// path to tb. A container backend's log lines go to tb while it runs, or to stderr for a
// shared server, which outlives tb.
func newServer(tb testing.TB, mode string, shared bool, popts ProcessOptions) (*Server, error) {
	logTo := tb
	if shared {
		logTo = nil
	}
	log := newSwitchLogger(logTo)
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	srv, err := redisserver.Start(ctx, redisserver.Options{
		Mode:      mode,
		Process:   popts,
		Container: redisserver.ContainerOptions{Logger: log},
	})
	if err != nil {
		return nil, fmt.Errorf("redistest: %w", err)
	}
	announce(tb, srv.Mode, srv.How+"; "+describeBuild(srv.Mode))
	s := &Server{Addr: srv.Addr, shared: shared, log: log, srv: srv}
	register(s)
	return s, nil
}
