package redistest

import (
	"bufio"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/goredisson/goredisson/internal/redisserver"
)

// Certs is a certificate authority made for one test and a server certificate it signed
// for 127.0.0.1, written as PEM files in the test's temporary directory.
type Certs struct {
	CAFile   string // the CA certificate: what a client trusts
	CertFile string // the server certificate (IP SAN 127.0.0.1, name localhost)
	KeyFile  string // the server's private key
	Pool     *x509.CertPool
}

// NewCerts makes a fresh CA and a server certificate for 127.0.0.1 with crypto/x509, valid
// for a day, and writes them under t.TempDir().
func NewCerts(t testing.TB) *Certs {
	t.Helper()
	dir := t.TempDir()
	caKey := newKey(t)
	ca := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "goredisson test CA"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, ca, ca, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatalf("redistest: CA certificate: %v", err)
	}
	caCert, err := x509.ParseCertificate(caDER)
	if err != nil {
		t.Fatalf("redistest: CA certificate: %v", err)
	}
	srvKey := newKey(t)
	srv := &x509.Certificate{
		SerialNumber: big.NewInt(2),
		Subject:      pkix.Name{CommonName: "127.0.0.1"},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour),
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1)},
		DNSNames:     []string{"localhost"},
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	srvDER, err := x509.CreateCertificate(rand.Reader, srv, caCert, &srvKey.PublicKey, caKey)
	if err != nil {
		t.Fatalf("redistest: server certificate: %v", err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(srvKey)
	if err != nil {
		t.Fatalf("redistest: server key: %v", err)
	}
	c := &Certs{
		CAFile:   filepath.Join(dir, "ca.pem"),
		CertFile: filepath.Join(dir, "server.pem"),
		KeyFile:  filepath.Join(dir, "server.key"),
		Pool:     x509.NewCertPool(),
	}
	c.Pool.AddCert(caCert)
	writePEM(t, c.CAFile, "CERTIFICATE", caDER)
	writePEM(t, c.CertFile, "CERTIFICATE", srvDER)
	writePEM(t, c.KeyFile, "PRIVATE KEY", keyDER)
	return c
}

func newKey(t testing.TB) *ecdsa.PrivateKey {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatalf("redistest: key: %v", err)
	}
	return k
}

func writePEM(t testing.TB, path, kind string, der []byte) {
	t.Helper()
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: kind, Bytes: der}), 0o600); err != nil {
		t.Fatalf("redistest: %v", err)
	}
}

// ClientTLS returns the TLS configuration of a client that trusts only the test's CA.
func (c *Certs) ClientTLS() *tls.Config {
	return &tls.Config{RootCAs: c.Pool, ServerName: "127.0.0.1", MinVersion: tls.VersionTLS12}
}

// TLSServer is a redis-server process that listens with TLS on TLSAddr, with the test's
// certificates, and without TLS on Addr (for the test's own setup as the default user).
type TLSServer struct {
	*Server
	TLSAddr string
	Certs   *Certs
}

// StartTLS starts a redis-server process (whatever GOREDISSON_REDIS says) that also listens
// with TLS on a free loopback port, with fresh certificates from NewCerts; clients need no
// certificate of their own. extra are more redis-server arguments. It skips the test when
// the server's build has no TLS (as the builds of scripts/redis-lines), and fails it when
// the server does not start for another reason.
func StartTLS(t testing.TB, extra ...string) *TLSServer {
	t.Helper()
	certs := NewCerts(t)
	port, err := redisserver.FreePort()
	if err != nil {
		t.Fatalf("redistest: %v", err)
	}
	args := append([]string{
		"--tls-port", strconv.Itoa(port),
		"--tls-cert-file", certs.CertFile,
		"--tls-key-file", certs.KeyFile,
		"--tls-ca-cert-file", certs.CAFile,
		"--tls-auth-clients", "no",
	}, extra...)
	s, err := tryStart(t, ModeProcess, ProcessOptions{Args: args})
	if err != nil {
		if noTLS(err) {
			_, build := programBuild(t)
			t.Skipf("needs a TLS build of the server, which this %v is not: %v", build, err)
		}
		t.Fatalf("%v", err)
	}
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	// The plain port answered PING, so the TLS one listens too: check that it speaks TLS.
	d := &tls.Dialer{Config: certs.ClientTLS()}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		t.Fatalf("redistest: TLS handshake with redis-server on %s: %v", addr, err)
	}
	conn.Close()
	return &TLSServer{Server: s, TLSAddr: addr, Certs: certs}
}

// noTLS reports whether err is the refusal of a server built without TLS: Redis 6.2 does
// not know the option, Redis 7+ and Valkey lack the connection type.
func noTLS(err error) bool {
	msg := err.Error()
	return strings.Contains(msg, "'tls-port") || strings.Contains(msg, "Failed finding TLS support")
}

// TLSClient returns a rueidis client to s's TLS port that trusts the test's CA, closed in
// t.Cleanup. Each opt edits the option after InitAddress and TLSConfig are set.
func (s *TLSServer) TLSClient(t testing.TB, opts ...func(*rueidis.ClientOption)) rueidis.Client {
	t.Helper()
	return newClient(t, rueidis.ClientOption{InitAddress: []string{s.TLSAddr}, TLSConfig: s.Certs.ClientTLS()}, opts, "")
}

// ACLRules reads the fenced code blocks whose info string is "acl <id>" from the Markdown
// file at path and returns each block's commands by id, one command (its words, split on
// white space) per non-empty line. Documentation that gives ACL rules in such blocks is then
// what the tests apply, verbatim.
func ACLRules(t testing.TB, path string) map[string][][]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatalf("redistest: %v", err)
	}
	defer f.Close()
	rules := make(map[string][][]string)
	id := ""
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		switch {
		case id == "" && strings.HasPrefix(line, "```acl "):
			id = strings.TrimSpace(strings.TrimPrefix(line, "```acl "))
			if _, dup := rules[id]; dup || id == "" {
				t.Fatalf("redistest: %s: acl block %q is empty or given twice", path, id)
			}
			rules[id] = nil
		case id != "" && line == "```":
			id = ""
		case id != "" && line != "":
			rules[id] = append(rules[id], strings.Fields(line))
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("redistest: %s: %v", path, err)
	}
	if id != "" {
		t.Fatalf("redistest: %s: acl block %q is not closed", path, id)
	}
	return rules
}

// LineBlocks returns the blocks of docs/SECURITY.md that a user of the server behind rc
// needs for its server line, besides those of the client library and its lock types:
// "rueidis-not-7.0" on every line but Redis 7.0 (told apart by its features: ACL DRYRUN
// without CLIENT SETINFO).
func LineBlocks(t testing.TB, rc rueidis.Client) []string {
	t.Helper()
	if Has(t, rc, ACLSelectors) && !Has(t, rc, ClientSetinfo) {
		return nil
	}
	return []string{"rueidis-not-7.0"}
}

// ACLUser returns the ACL SETUSER command that creates user with password (from no
// permissions and no channels: "reset resetchannels", as Redis 6.2 needs) and the rules of
// blocks (ids of rules, each block one line of rules, as ACLRules returns them), less the
// rules in without. It fails the test when a block is missing or a rule of without is in
// none of the blocks.
func ACLUser(t testing.TB, rules map[string][][]string, user, password string, blocks []string, without ...string) []string {
	t.Helper()
	cmd := []string{"ACL", "SETUSER", user, "reset", "resetchannels", "on", ">" + password}
	removed := map[string]bool{}
	for _, b := range blocks {
		lines, ok := rules[b]
		if !ok || len(lines) != 1 {
			t.Fatalf("redistest: no acl block %q of one line of rules", b)
		}
		for _, r := range lines[0] {
			if slices.Contains(without, r) {
				removed[r] = true
				continue
			}
			cmd = append(cmd, r)
		}
	}
	for _, w := range without {
		if !removed[w] {
			t.Fatalf("redistest: %q is in none of the acl blocks %v", w, blocks)
		}
	}
	return cmd
}

// ApplyACL runs each command (ACL SETUSER ...) on rc, in order, and fails the test on the
// first error.
func ApplyACL(t testing.TB, rc rueidis.Client, cmds ...[]string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, c := range cmds {
		if err := rc.Do(ctx, rc.B().Arbitrary(c...).Build()).Error(); err != nil {
			t.Fatalf("redistest: %s: %v", strings.Join(c, " "), err)
		}
	}
}
