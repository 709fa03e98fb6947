package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/goredisson/goredisson/integration/rediscontainer"
	"github.com/goredisson/goredisson/internal/redistest"
)

func TestMain(m *testing.M) {
	rediscontainer.Use()
	redistest.Main(m)
}

// javaField is a holder field as Java Redisson writes it: "<client-uuid>:<thread-id>".
const (
	javaClient = "6f1c2a9e-3b7d-4c1e-9a55-0d2f8e4b7c11"
	javaField  = javaClient + ":57"
)

// cli runs the command in-process with stdin and returns its exit code, stdout and stderr.
func cli(t *testing.T, stdin io.Reader, args ...string) (int, string, string) {
	t.Helper()
	if stdin == nil {
		stdin = strings.NewReader("")
	}
	var out, errb bytes.Buffer
	code := run(context.Background(), args, stdin, &out, &errb)
	t.Logf("goredisson %s -> exit %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), code, out.String(), errb.String())
	return code, out.String(), errb.String()
}

// unique returns prefix followed by a random suffix, so tests sharing a server never meet.
func unique(prefix string) string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return prefix + hex.EncodeToString(b)
}

// javaLock writes a lock as Java Redisson holds it, with raw commands.
func javaLock(t *testing.T, rc rueidis.Client, name string) {
	t.Helper()
	redistest.Do(t, rc, rc.B().Hset().Key(name).FieldValue().FieldValue(javaField, "1").Build())
	redistest.Do(t, rc, rc.B().Pexpire().Key(name).Milliseconds(30000).Build())
}

// inspected is inspect's --json output.
type inspected struct {
	Locks []*lockState `json:"locks"`
}

func inspectJSON(t *testing.T, addr string, names ...string) (int, inspected) {
	t.Helper()
	code, out, _ := cli(t, nil, append([]string{"--redis", addr, "inspect", "--json"}, names...)...)
	var got inspected
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("inspect --json printed no JSON: %v\n%s", err, out)
	}
	if len(got.Locks) != len(names) {
		t.Fatalf("inspect --json: %d locks for %d names", len(got.Locks), len(names))
	}
	return code, got
}

// eventually polls cond every 20 ms for up to 10 s, and fails the test if it never holds.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	if !redistest.Poll(10*time.Second, 20*time.Millisecond, cond) {
		t.Fatalf("timed out waiting for %s", what)
	}
}
