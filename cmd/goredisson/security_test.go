package main

import (
	"strings"
	"testing"

	"github.com/goredisson/goredisson/internal/redistest"
)

// TestTLSACL: inspect and force-unlock against a TLS-only address, as the ACL user of
// docs/SECURITY.md with its blocks for the tool, from a rediss:// URL and --tls-ca (or
// REDIS_TLS_CA) naming the test's CA.
func TestTLSACL(t *testing.T) {
	srv := redistest.StartTLS(t)
	admin := srv.Client(t)
	rules := redistest.ACLRules(t, "../../docs/SECURITY.md")
	cliBlock := "goredisson-cli"
	if !redistest.Has(t, admin, redistest.ReadOnlyScripts) {
		cliBlock = "goredisson-cli-6.2"
	}
	blocks := append([]string{"rueidis", "locks", "lock-pubsub", cliBlock}, redistest.LineBlocks(t, admin)...)
	redistest.ApplyACL(t, admin, redistest.ACLUser(t, rules, "orders-svc", "orders-secret", blocks))
	name := unique("orders:")
	javaLock(t, admin, name)
	url := "rediss://orders-svc:orders-secret@" + srv.TLSAddr

	code, out, _ := cli(t, nil, "--redis", url, "--tls-ca", srv.Certs.CAFile, "inspect", name)
	if code != exitOK || !strings.Contains(out, "client "+javaClient+"  owner 57  hold count 1") {
		t.Fatalf("inspect over TLS: exit %d, %q", code, out)
	}

	// --tls-ca without rediss:// is a usage error.
	if code, _, _ := cli(t, nil, "--redis", srv.Addr, "--tls-ca", srv.Certs.CAFile, "inspect", name); code != exitUsage {
		t.Errorf("--tls-ca with a plain address: exit %d, want %d", code, exitUsage)
	}

	t.Setenv(envTLSCA, srv.Certs.CAFile)
	code, out, _ = cli(t, nil, "--redis", url, "force-unlock", "--yes", name)
	if code != exitOK || !strings.Contains(out, "force-unlocked "+name) {
		t.Fatalf("force-unlock over TLS: exit %d, %q", code, out)
	}
	if redistest.Exists(t, admin, name) {
		t.Error("the lock still exists")
	}
	// The documented blocks cover every call of the tool.
	entries, err := redistest.Do(t, admin, admin.B().AclLog().Count(100).Build()).ToArray()
	if err != nil || len(entries) != 0 {
		t.Errorf("ACL LOG: the server refused something: %v %v", entries, err)
	}
}
