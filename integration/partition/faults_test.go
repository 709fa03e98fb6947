package partition

import (
	"fmt"
	"os"
	"strings"
	"syscall"
	"testing"
)

// The faults of the suite. Each returns what ends it; run calls that 2.5 leases later.
var (
	// cutClient: the victim client loses every server (it still reaches the resource), for
	// longer than a lease: its renewals fail, its lease runs out, another client takes the
	// lock. A careful holder stops writing when its Held context ends.
	cutClient = fault{name: "client cut from the servers", inject: func(t *testing.T, s *scenario, victim int) func() {
		c := s.cls[victim].name
		for _, srv := range s.srv.servers {
			s.tp.cut(c, srv)
		}
		return func() {
			for _, srv := range s.srv.servers {
				s.tp.heal(c, srv)
			}
		}
	}}
	// pauseClient: the victim client's process is stopped (SIGSTOP) for longer than a lease,
	// as a long GC pause or a stopped VM: it may be between its check and its write.
	pauseClient = fault{name: "client process paused", inject: func(t *testing.T, s *scenario, victim int) func() {
		p := s.cls[victim].cmd.Process
		_ = p.Signal(syscall.SIGSTOP)
		return func() { _ = p.Signal(syscall.SIGCONT) }
	}}
	// restartServer: a server is killed (SIGKILL) and started again at once, empty (no
	// persistence): the holds it had are gone.
	restartServer = fault{name: "server killed, restarted empty", inject: func(t *testing.T, s *scenario, victim int) func() {
		srv := s.srv.servers[victim%len(s.srv.servers)]
		s.srv.kill(srv)
		s.srv.start(t, srv)
		return func() {}
	}}
)

// expectation says which outcomes a scenario may show by design.
type expectation struct {
	violations bool // mutual exclusion may be broken at the resource
	tokens     bool // fencing tokens may repeat or go back
}

// TestPartitions runs each lock type under each fault in each configuration, with three
// clients in namespaces of their own, and checks the histories: accepted writes of two holds
// never interleave, and fencing tokens only grow, except where the design allows it, which
// the table shows with counts. The table is logged at the end (docs/RELIABILITY.md,
// "Partitions").
func TestPartitions(t *testing.T) {
	needNetns(t)
	removeLeftovers()
	type row struct {
		config, kind string
		servers      int
		f            fault
		allowed      expectation
	}
	rows := []row{
		{"single server", "lock", 1, cutClient, expectation{}},
		{"single server", "lock", 1, pauseClient, expectation{violations: true}},
		{"single server", "lock", 1, restartServer, expectation{violations: true}},
		{"single server", "fenced", 1, cutClient, expectation{}},
		{"single server", "fenced", 1, pauseClient, expectation{}},
		{"single server", "fenced", 1, restartServer, expectation{tokens: true}},
		{sentinelConfig, "lock", 0, killMaster, expectation{}},
		{sentinelConfig, "lock", 0, isolateMaster, expectation{}},
		{sentinelConfig, "fenced", 0, isolateMaster, expectation{tokens: true}},
		{"RedLock, 5 servers", "redlock", 5, cutClient, expectation{}},
		{"RedLock, 5 servers", "redlock", 5, pauseClient, expectation{violations: true}},
		{"RedLock, 5 servers", "redlock", 5, restartServer, expectation{violations: true}},
	}
	var outcomes []outcome
	for _, r := range rows {
		t.Run(fmt.Sprintf("%s/%s/%s", r.config, r.kind, r.f.name), func(t *testing.T) {
			s := &scenario{config: r.config, kind: r.kind, fault: r.f}
			o := s.run(t, r.servers, 3)
			outcomes = append(outcomes, o)
			t.Logf("acquired %d, accepted writes %d, refused %d, violations %d, token errors %d, lost signals %d",
				o.acquired, o.accepted, o.refused, len(o.violations), len(o.tokenErrors), o.lost)
			if o.acquired == 0 {
				t.Errorf("no acquisition in the run")
			}
			if !r.allowed.violations && len(o.violations) > 0 {
				t.Errorf("mutual exclusion broken at the resource: %s", strings.Join(first(o.violations, 5), "; "))
			}
			if !r.allowed.tokens && len(o.tokenErrors) > 0 {
				t.Errorf("fencing tokens not strictly increasing: %s", strings.Join(first(o.tokenErrors, 5), "; "))
			}
		})
	}
	table := partitionTable(outcomes)
	t.Logf("\n%s", table)
	if f := os.Getenv("GOREDISSON_PARTITION_OUT"); f != "" {
		if err := os.WriteFile(f, []byte(table), 0o644); err != nil {
			t.Error(err)
		}
	}
}

func first(s []string, n int) []string { return s[:min(n, len(s))] }

// partitionTable renders outcomes as a Markdown table.
func partitionTable(os []outcome) string {
	var b strings.Builder
	b.WriteString("| configuration | lock | fault | acquisitions | writes accepted | writes refused by fencing | violations (interleaved holds) | token errors | loss signals |\n")
	b.WriteString("|---|---|---|---:|---:|---:|---:|---:|---:|\n")
	for _, o := range os {
		fmt.Fprintf(&b, "| %s | %s | %s | %d | %d | %d | %d | %d | %d |\n", o.config, o.kind, o.fault,
			o.acquired, o.accepted, o.refused, len(o.violations), len(o.tokenErrors), o.lost)
	}
	return b.String()
}
