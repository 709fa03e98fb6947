package redistest

import (
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// mainRunning is set by Main; Shared requires it.
var mainRunning atomic.Bool

// Main runs the tests of a package that uses Redis; call it from TestMain:
//
//	func TestMain(m *testing.M) { redistest.Main(m) }
//
// It runs the tests, stops every server still running
// (the [Shared] one and any [Start]ed one whose cleanup did not run), then, if the
// tests passed, checks that no goroutine outlives them (go.uber.org/goleak; rueidis
// clients must be closed, which [Server.Client] does). extra adds goleak options for
// goroutines the package knows to be harmless; use it sparingly and say why. Main
// exits the process: with the tests' code, or 1 when stopping a server or the leak
// check failed.
func Main(m *testing.M, extra ...goleak.Option) {
	mainRunning.Store(true)
	code := 0
	if err := exportShared(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		code = 1
	} else {
		code = m.Run()
	}
	if err := stopAll(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		code = max(code, 1)
	}
	if code == 0 {
		if err := findLeaks(append(leakOptions(), extra...)...); err != nil {
			fmt.Fprintf(os.Stderr, "redistest: goroutines leaked by the tests: %v\n", err)
			code = 1
		}
	}
	os.Exit(code)
}

// leakOptions lists background goroutines that are known to be harmless and cannot
// be stopped from here. Keep it empty unless a goroutine is proven unavoidable.
func leakOptions() []goleak.Option {
	return nil
}

// findLeaks runs goleak's check until it passes or 3 s have passed. goleak itself waits
// under 1 s, and a rueidis cluster client that saw a connection error schedules a topology
// refresh after a random delay of up to 1 s, whose goroutine sleeps out that delay even
// after the client was closed.
func findLeaks(opts ...goleak.Option) error {
	deadline := time.Now().Add(3 * time.Second)
	for {
		err := goleak.Find(opts...)
		if err == nil || time.Now().After(deadline) {
			return err
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// live holds every server started and not yet stopped.
var live struct {
	mu      sync.Mutex
	servers map[*Server]struct{}
}

func register(s *Server) {
	live.mu.Lock()
	defer live.mu.Unlock()
	if live.servers == nil {
		live.servers = map[*Server]struct{}{}
	}
	live.servers[s] = struct{}{}
}

func unregister(s *Server) {
	live.mu.Lock()
	defer live.mu.Unlock()
	delete(live.servers, s)
}

// stopAll stops every live server, the shared one included.
func stopAll() error {
	live.mu.Lock()
	servers := live.servers
	live.servers = nil
	live.mu.Unlock()
	var errs []error
	for s := range servers {
		errs = append(errs, s.terminate())
	}
	shared.mu.Lock()
	shared.srv, shared.err = nil, errors.New("redistest: the shared server was stopped by Main")
	shared.mu.Unlock()
	return errors.Join(errs...)
}

var exportEnv string

// ExportURL makes Main start the [Shared] server before the tests and set the environment
// variable env to its URL (redis://host:port), for runnable examples that read their Redis
// from the environment. Call it from TestMain before Main.
func ExportURL(env string) { exportEnv = env }

func exportShared() error {
	if exportEnv == "" {
		return nil
	}
	shared.mu.Lock()
	defer shared.mu.Unlock()
	if shared.srv == nil && shared.err == nil {
		shared.srv, shared.err = newServer(nil, "", true, ProcessOptions{})
	}
	if shared.err != nil {
		return fmt.Errorf("redistest: shared server for %s: %w", exportEnv, shared.err)
	}
	return os.Setenv(exportEnv, "redis://"+shared.srv.Addr)
}
