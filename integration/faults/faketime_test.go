package faults

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/goredisson/goredisson/internal/redisserver"
	"github.com/goredisson/goredisson/internal/redistest"
)

// libfaketimeGlobs are where libfaketime is installed: Debian's libfaketime package
// (dpkg -L libfaketime) puts it under the multiarch directory, a source build under
// /usr/local/lib.
var libfaketimeGlobs = []string{
	"/usr/lib/*-linux-gnu/faketime/libfaketime.so.1",
	"/usr/lib/faketime/libfaketime.so.1",
	"/usr/local/lib/faketime/libfaketime.so.1",
}

// findLibfaketime returns the path of the first libfaketime library file that exists.
func findLibfaketime() (string, error) {
	for _, g := range libfaketimeGlobs {
		matches, _ := filepath.Glob(g)
		for _, m := range matches {
			if st, err := os.Stat(m); err == nil && st.Mode().IsRegular() {
				return m, nil
			}
		}
	}
	return "", fmt.Errorf("libfaketime is not installed (none of %s exists; apt-get install libfaketime)",
		strings.Join(libfaketimeGlobs, ", "))
}

// fakeClockServer is a redis-server process whose wall clock (CLOCK_REALTIME, which
// Redis keeps TTLs in) runs at the real time plus an offset read from a file on every
// call. Its monotonic clock is left alone, as a wall clock step (NTP, an operator's
// date) leaves it.
type fakeClockServer struct {
	*redistest.Server
	lib  string
	file string
}

// startFakeClockServer starts redis-server under libfaketime and checks that the
// server's TIME follows the offset file, forward and back. It returns an error saying
// why when libfaketime is missing, the server does not start under it, or its clock
// does not move; a server it started is stopped at the end of the test either way.
//
// Debian's redis-server is linked with libjemalloc. libfaketime allocates while it
// initialises, and jemalloc reads the clock while it initialises, through libfaketime:
// the two recurse into each other and the server hangs at start. Preloading libc.so.6
// after libfaketime puts glibc's malloc ahead of jemalloc's in symbol lookup, so the
// server allocates with glibc and starts.
func startFakeClockServer(t *testing.T) (*fakeClockServer, error) {
	t.Helper()
	lib, err := findLibfaketime()
	if err != nil {
		return nil, err
	}
	file := filepath.Join(t.TempDir(), "faketime")
	s := &fakeClockServer{lib: lib, file: file}
	if err := s.writeOffset(0); err != nil {
		return nil, err
	}
	env := []string{
		"LD_PRELOAD=" + lib + " libc.so.6",
		"FAKETIME_TIMESTAMP_FILE=" + file,
		"FAKETIME_NO_CACHE=1",
		"FAKETIME_DONT_FAKE_MONOTONIC=1",
	}
	if err := probeRedisVersion(env); err != nil {
		return nil, fmt.Errorf("redis-server does not run under %s: %w", lib, err)
	}
	s.Server = redistest.StartProcess(t, redistest.ProcessOptions{Env: env})
	rc := s.Client(t)
	for _, want := range []time.Duration{time.Minute, 0} {
		if err := s.shift(rc, want); err != nil {
			return nil, fmt.Errorf("redis-server started with %s does not run on the shifted clock: %w", lib, err)
		}
	}
	return s, nil
}

// shift sets the server's clock offset to d and waits until its TIME shows it.
func (s *fakeClockServer) shift(rc rueidis.Client, d time.Duration) error {
	if err := s.writeOffset(d); err != nil {
		return err
	}
	const tolerance = 2 * time.Second
	deadline := time.Now().Add(5 * time.Second)
	for {
		skew, err := serverSkew(rc)
		if err == nil && (skew-d).Abs() < tolerance {
			return nil
		}
		if time.Now().After(deadline) {
			if err != nil {
				return fmt.Errorf("offset %v: TIME: %w", d, err)
			}
			return fmt.Errorf("offset %v: the server's clock is %v off the real clock", d, skew)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func (s *fakeClockServer) writeOffset(d time.Duration) error {
	return os.WriteFile(s.file, []byte(fmt.Sprintf("%+d\n", int64(d/time.Second))), 0o644)
}

// serverSkew returns the server's TIME minus this process's clock at the middle of the
// round trip.
func serverSkew(rc rueidis.Client) (time.Duration, error) {
	before := time.Now()
	parts, err := rc.Do(context.Background(), rc.B().Time().Build()).AsStrSlice()
	after := time.Now()
	if err != nil {
		return 0, err
	}
	if len(parts) != 2 {
		return 0, fmt.Errorf("TIME replied %q", parts)
	}
	sec, err1 := strconv.ParseInt(parts[0], 10, 64)
	usec, err2 := strconv.ParseInt(parts[1], 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return 0, fmt.Errorf("TIME replied %q: %w", parts, err)
	}
	server := time.Unix(sec, usec*1000)
	return server.Sub(before.Add(after.Sub(before) / 2)), nil
}

// probeRedisVersion runs the server program's `--version` (GOREDISSON_REDIS_SERVER, else
// redis-server from PATH) with env added and checks that it answers within seconds, as a
// Redis or Valkey build: a server that hangs while its libraries initialise fails here
// rather than at start.
func probeRedisVersion(env []string) error {
	bin, err := redisserver.ServerProgram()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "--version")
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		return fmt.Errorf("`%s --version` did not return within 5 s: %.300s", bin, out)
	}
	if err != nil {
		return fmt.Errorf("`%s --version`: %w: %.300s", bin, err, out)
	}
	if _, err := redisserver.ParseVersionOutput(string(out)); err != nil {
		return fmt.Errorf("`%s --version`: %w", bin, err)
	}
	return nil
}
