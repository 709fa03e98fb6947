package rlock_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/goredisson/goredisson/internal/redistest"
)

// TestReadmeCodeIsExampleCode keeps README.md's Go code from rotting: every ```go block of
// the README after the first (a whole program, TestReadmeProgramRuns) must appear, line for
// line (indentation aside), in the runnable examples of this package or of the otel module,
// which the tests compile and run.
func TestReadmeCodeIsExampleCode(t *testing.T) {
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	var examples []string
	for _, f := range []string{"example_test.go", "example_more_test.go", "example_group_test.go", "../otel/example_test.go"} {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		examples = append(examples, codeLines(string(b))...)
	}
	blocks := regexp.MustCompile("(?s)```go\n(.*?)```").FindAllStringSubmatch(string(readme), -1)
	if len(blocks) < 2 {
		t.Fatal("README.md has no Go code block after its first program")
	}
	for _, b := range blocks[1:] { // the first is a whole program: TestReadmeProgramRuns
		if lines := codeLines(b[1]); !contains(examples, lines) {
			t.Errorf("README.md's Go block is not in the examples:\n%s", b[1])
		}
	}
}

// codeLines returns the non-blank lines of src without their indentation.
func codeLines(src string) []string {
	var out []string
	for _, l := range strings.Split(src, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			out = append(out, l)
		}
	}
	return out
}

// contains reports whether sub is a contiguous run of lines in all.
func contains(all, sub []string) bool {
	for i := 0; i+len(sub) <= len(all); i++ {
		match := true
		for j := range sub {
			if all[i+j] != sub[j] {
				match = false
				break
			}
		}
		if match {
			return true
		}
	}
	return false
}

// TestReadmeProgramRuns: README.md's first Go block is a whole program that runs as pasted.
// It is written to a directory of this module (so that it builds against this tree), run
// with `go run` and REDIS_URL set to a real Redis in the host:port form, and must print its
// last line, exit 0, and leave no key behind (its lock is released).
func TestReadmeProgramRuns(t *testing.T) {
	readme, err := os.ReadFile("../README.md")
	require.NoError(t, err)
	blocks := regexp.MustCompile("(?s)```go\n(.*?)```").FindAllStringSubmatch(string(readme), -1)
	require.NotEmpty(t, blocks)
	prog := blocks[0][1]
	require.Contains(t, prog, "package main", "the first Go block is a whole program")
	dir, err := os.MkdirTemp("..", "readmeprogram")
	require.NoError(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	require.NoError(t, os.WriteFile(filepath.Join(dir, "main.go"), []byte(prog), 0o644))

	srv := redistest.Start(t)
	rc := srv.Client(t)
	ctx := redistest.Context(t, 2*time.Minute)
	cmd := exec.CommandContext(ctx, "go", "run", "./"+filepath.Base(dir))
	cmd.Dir = ".."
	cmd.Env = append(os.Environ(), "REDIS_URL="+srv.Addr)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	assert.Contains(t, string(out), "done; order:42 is free again")
	keys, err := rc.Do(ctx, rc.B().Keys().Pattern("*").Build()).AsStrSlice()
	require.NoError(t, err)
	assert.Empty(t, keys, "the program left keys behind")
}
