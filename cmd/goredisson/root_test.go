package main

import (
	"strings"
	"testing"

	"github.com/goredisson/goredisson/internal/redistest"
)

func TestUsageErrors(t *testing.T) {
	for _, args := range [][]string{
		{"inspect"},
		{"force-unlock"},
		{"force-unlock", "a", "b"},
		{"frobnicate"},
		{"inspect", "--bogus", "x"},
		{"--timeout", "soon", "inspect", "x"},
		{"--timeout", "-1s", "inspect", "x"},
		{"--redis", "not an address", "inspect", "x"},
		{"--redis", "http://127.0.0.1:6379", "inspect", "x"},
		{"inspect", ""},
		{"demo", "--processes", "0"},
		{"demo", "--stock", "-5"},
		{"demo", "extra"},
	} {
		code, _, errOut := cli(t, nil, args...)
		if code != exitUsage {
			t.Errorf("%q: exit %d, want %d", args, code, exitUsage)
		}
		if !strings.Contains(errOut, "--help' for usage") {
			t.Errorf("%q: stderr %q lacks the help hint", args, errOut)
		}
	}
}

func TestRedisURLEnv(t *testing.T) {
	srv := redistest.Shared(t)
	t.Setenv("REDIS_URL", "redis://"+srv.Addr+"/0")
	code, out, _ := cli(t, nil, "inspect", unique("missing:"))
	if code != exitNotFound || !strings.Contains(out, "not found") {
		t.Errorf("exit %d, %q", code, out)
	}
}

func TestHelp(t *testing.T) {
	t.Run("--help", func(t *testing.T) {
		code, out, _ := cli(t, nil, "--help")
		if code != exitOK {
			t.Fatalf("exit %d", code)
		}
		for _, want := range []string{"Exit codes:", "  3    inspect:", "  4    force-unlock: confirmation declined", "REDIS_URL", "goredisson demo", "Examples:"} {
			if !strings.Contains(out, want) {
				t.Errorf("--help lacks %q", want)
			}
		}
		if strings.Contains(out, "demo-worker") {
			t.Error("--help lists the hidden demo-worker")
		}
	})
	for _, cmd := range []string{"demo", "inspect", "force-unlock"} {
		t.Run(cmd+" --help", func(t *testing.T) {
			code, out, _ := cli(t, nil, cmd, "--help")
			if code != exitOK || !strings.Contains(out, "Examples:\n  # ") || !strings.Contains(out, "goredisson "+cmd) {
				t.Errorf("%s --help: exit %d, no examples:\n%s", cmd, code, out)
			}
		})
	}
	t.Run("no arguments", func(t *testing.T) {
		code, out, _ := cli(t, nil)
		if code != exitOK || !strings.Contains(out, "Usage:") {
			t.Errorf("no arguments: exit %d, %q", code, out)
		}
	})
}
