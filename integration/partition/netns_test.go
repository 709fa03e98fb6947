package partition

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
)

// The topology: a switch namespace holding a bridge, and one namespace per host (servers,
// Sentinels, clients), each joined to the bridge by a veth pair and given an address of
// subnet. The test's own namespace is joined too, at .1, so that it reaches every host (to
// start and watch servers, and for the clients to reach the resource). Nothing is routed:
// every host sits on the one link, and no address outside the test's own hosts is used.
// Faults are iptables rules and link states inside the hosts' namespaces.

// subnet is the prefix of the test hosts' addresses (a /24 that exists only on the test's
// bridge).
const subnet = "10.211.77."

// nsPrefix starts the name of every namespace and link the tests make, so that a run can
// remove what a killed run left.
const nsPrefix = "grp"

var topologies atomic.Int32

// topology is one test's namespaces.
type topology struct {
	t      *testing.T
	id     string // unique per topology: names namespaces and links
	sw     string // the switch namespace
	hosts  map[string]string
	next   int
	rootIf string // the test namespace's end of its veth
}

// needNetns skips t unless the process may make namespaces (root, ip and iptables present).
func needNetns(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("partition tests need root (network namespaces)")
	}
	for _, bin := range []string{"ip", "iptables"} {
		if _, err := exec.LookPath(bin); err != nil {
			t.Skipf("partition tests need %s: %v", bin, err)
		}
	}
}

// newTopology makes the switch namespace and joins the test's namespace to it at
// subnet+"1". Everything it makes is removed in t.Cleanup, even when the test fails.
func newTopology(t *testing.T) *topology {
	t.Helper()
	needNetns(t)
	id := fmt.Sprintf("%s%sx%d", nsPrefix, strconv.FormatInt(int64(os.Getpid()), 36), topologies.Add(1))
	tp := &topology{t: t, id: id, sw: id + "sw", hosts: map[string]string{}, next: 2, rootIf: id + "r"}
	t.Cleanup(tp.remove)
	tp.must("ip", "netns", "add", tp.sw)
	tp.must("ip", "netns", "exec", tp.sw, "ip", "link", "add", "br0", "type", "bridge")
	tp.must("ip", "netns", "exec", tp.sw, "ip", "link", "set", "br0", "up")
	tp.must("ip", "netns", "exec", tp.sw, "ip", "link", "set", "lo", "up")
	// The test's own end.
	tp.must("ip", "link", "add", tp.rootIf, "type", "veth", "peer", "name", id+"rp")
	tp.must("ip", "link", "set", id+"rp", "netns", tp.sw)
	tp.must("ip", "netns", "exec", tp.sw, "ip", "link", "set", id+"rp", "master", "br0", "up")
	tp.must("ip", "addr", "add", subnet+"1/24", "dev", tp.rootIf)
	tp.must("ip", "link", "set", tp.rootIf, "up")
	return tp
}

// host makes a namespace for name on the switch and returns its address.
func (tp *topology) host(name string) string {
	tp.t.Helper()
	ns := tp.ns(name)
	addr := fmt.Sprintf("%s%d", subnet, tp.next)
	link := fmt.Sprintf("%sh%d", tp.id, tp.next)
	tp.next++
	tp.hosts[name] = addr
	tp.must("ip", "netns", "add", ns)
	tp.must("ip", "netns", "exec", ns, "ip", "link", "set", "lo", "up")
	tp.must("ip", "link", "add", link, "type", "veth", "peer", "name", link+"p")
	tp.must("ip", "link", "set", link, "netns", ns)
	tp.must("ip", "link", "set", link+"p", "netns", tp.sw)
	tp.must("ip", "netns", "exec", tp.sw, "ip", "link", "set", link+"p", "master", "br0", "up")
	tp.must("ip", "netns", "exec", ns, "ip", "addr", "add", addr+"/24", "dev", link)
	tp.must("ip", "netns", "exec", ns, "ip", "link", "set", link, "up")
	return addr
}

// ns is the namespace of host name.
func (tp *topology) ns(name string) string { return tp.id + "-" + name }

// cut drops every packet between hosts a and b, in both directions, until heal.
func (tp *topology) cut(a, b string) {
	tp.t.Helper()
	for _, r := range tp.rules(a, b) {
		tp.must(append([]string{"ip", "netns", "exec", r[0], "iptables", "-A"}, r[1:]...)...)
	}
}

// heal removes the rules of cut(a, b).
func (tp *topology) heal(a, b string) {
	tp.t.Helper()
	for _, r := range tp.rules(a, b) {
		tp.must(append([]string{"ip", "netns", "exec", r[0], "iptables", "-D"}, r[1:]...)...)
	}
}

func (tp *topology) rules(a, b string) [][]string {
	return [][]string{
		{tp.ns(a), "INPUT", "-s", tp.hosts[b], "-j", "DROP"},
		{tp.ns(a), "OUTPUT", "-d", tp.hosts[b], "-j", "DROP"},
	}
}

// run runs a command in host name's namespace and returns it started; the caller waits.
func (tp *topology) command(name string, argv ...string) *exec.Cmd {
	return exec.Command("ip", append([]string{"netns", "exec", tp.ns(name)}, argv...)...)
}

// remove deletes every namespace and link of tp (rules go with their namespaces).
func (tp *topology) remove() {
	for name := range tp.hosts {
		_ = exec.Command("ip", "netns", "del", tp.ns(name)).Run()
	}
	_ = exec.Command("ip", "link", "del", tp.rootIf).Run()
	_ = exec.Command("ip", "netns", "del", tp.sw).Run()
}

func (tp *topology) must(argv ...string) {
	tp.t.Helper()
	var stderr bytes.Buffer
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		tp.t.Fatalf("%s: %v: %s", strings.Join(argv, " "), err, stderr.String())
	}
}

// removeLeftovers deletes the namespaces and links that a killed run of this package left:
// names of the form nsPrefix, PID in base 36, "x", … whose PID no longer runs.
func removeLeftovers() {
	stale := func(name string) bool {
		rest, ok := strings.CutPrefix(name, nsPrefix)
		if !ok {
			return false
		}
		digits, _, ok := strings.Cut(rest, "x")
		pid, err := strconv.ParseInt(digits, 36, 32)
		if !ok || err != nil || pid <= 0 {
			return false
		}
		return syscall.Kill(int(pid), 0) == syscall.ESRCH
	}
	if out, err := exec.Command("ip", "netns", "list").Output(); err == nil {
		for _, line := range strings.Split(string(out), "\n") {
			if f := strings.Fields(line); len(f) > 0 && stale(f[0]) {
				_ = exec.Command("ip", "netns", "del", f[0]).Run()
			}
		}
	}
	if out, err := exec.Command("ip", "-o", "link", "show").Output(); err == nil {
		for _, line := range strings.Split(string(out), "\n") {
			if f := strings.Fields(line); len(f) > 1 {
				name, _, _ := strings.Cut(strings.TrimSuffix(f[1], ":"), "@")
				if stale(name) {
					_ = exec.Command("ip", "link", "del", name).Run()
				}
			}
		}
	}
}
