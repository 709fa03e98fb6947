package rlock_test

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// TestReadmeCodeIsExampleCode keeps README.md's Go code from rotting: every ```go block of
// the README must appear, line for line (indentation aside), in the runnable examples of
// this package or of the otel module, which the tests compile and run.
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
	if len(blocks) == 0 {
		t.Fatal("README.md has no Go code block")
	}
	for _, b := range blocks {
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
