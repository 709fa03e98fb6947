package redistest

import (
	"sync"
	"testing"
)

// Start returns a fresh, empty Redis 7.0 server for this test, in the mode chosen by
// GOREDISSON_REDIS (see the package doc), and stops it in t.Cleanup. It blocks until
// the server answers PING (at most a minute) and fails the test if it cannot start;
// in container mode a missing image fails with the command that builds it. Safe to
// call from parallel tests.
func Start(t testing.TB) *Server {
	t.Helper()
	return startMode(t, "")
}

// StartProcess is Start for tests that need a redis-server process with options (extra
// arguments such as persistence, a wrapper such as faketime), whatever GOREDISSON_REDIS
// says.
func StartProcess(t testing.TB, opts ProcessOptions) *Server {
	t.Helper()
	return startWith(t, ModeProcess, opts)
}

// startMode is Start in a given mode ("" = the one GOREDISSON_REDIS selects).
func startMode(t testing.TB, mode string) *Server {
	t.Helper()
	return startWith(t, mode, ProcessOptions{})
}

func startWith(t testing.TB, mode string, opts ProcessOptions) *Server {
	t.Helper()
	s, err := tryStart(t, mode, opts)
	if err != nil {
		t.Fatalf("%v", err)
	}
	return s
}

// tryStart is startWith returning the error of a start that failed.
func tryStart(t testing.TB, mode string, opts ProcessOptions) (*Server, error) {
	t.Helper()
	s, err := newServer(t, mode, false, opts)
	if err != nil {
		return nil, err
	}
	t.Cleanup(func() {
		if err := s.terminate(); err != nil {
			t.Errorf("%v", err)
		}
		unregister(s)
	})
	return s, nil
}

var shared struct {
	mu  sync.Mutex
	srv *Server
	err error
}

// Shared returns the test binary's shared server, starting it on first use (in the
// mode chosen by GOREDISSON_REDIS). It is stopped by [Main], which the test binary
// must run from TestMain; without it Shared fails the test. Tests using it share one
// keyspace: they must use their own key names and must not call fault helpers. If
// the first start failed, every call fails with that error. Safe for concurrent use.
func Shared(t testing.TB) *Server {
	t.Helper()
	if !mainRunning.Load() {
		t.Fatalf("redistest: Shared needs redistest.Main: add `func TestMain(m *testing.M) { redistest.Main(m) }`")
	}
	shared.mu.Lock()
	defer shared.mu.Unlock()
	if shared.srv == nil && shared.err == nil {
		shared.srv, shared.err = newServer(t, "", true, ProcessOptions{})
	}
	if shared.err != nil {
		t.Fatalf("redistest: shared server: %v", shared.err)
	}
	return shared.srv
}
