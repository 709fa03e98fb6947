package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/moby/moby/client"
	"github.com/redis/rueidis"
	"github.com/testcontainers/testcontainers-go"

	"github.com/goredisson/goredisson/internal/redisserver"
	"github.com/goredisson/goredisson/internal/redistest"
)

// TestBinary runs the built command as a user would: real exit codes, the demo's worker
// processes (re-executions of the binary), its throwaway Redis and Ctrl-C.
func TestBinary(t *testing.T) {
	bin := buildBinary(t)
	srv := redistest.Shared(t)

	t.Run("exit codes", func(t *testing.T) {
		closed := closedAddr(t)
		rc := srv.Client(t)
		locked := unique("order:")
		javaLock(t, rc, locked)
		for _, c := range []struct {
			stdin string
			env   []string
			args  []string
			code  int
			want  string
		}{
			{args: []string{"--redis", srv.Addr, "inspect", locked}, code: 0, want: "owner 57"},
			{args: []string{"--redis", srv.Addr, "inspect", unique("missing:")}, code: 3, want: "not found"},
			{args: []string{"--redis", closed, "inspect", "x"}, code: 1, want: "cannot reach Redis at " + closed + " (from --redis)"},
			{env: []string{"REDIS_URL=redis://" + closed}, args: []string{"inspect", "x"}, code: 1, want: "(from $REDIS_URL)"},
			{env: []string{"REDIS_URL=redis://" + srv.Addr}, args: []string{"--redis", closed, "inspect", "x"}, code: 1, want: "(from --redis)"},
			{args: []string{"--redis", closed, "force-unlock", "--yes", "x"}, code: 1, want: "cannot reach Redis"},
			{args: []string{"--redis", closed, "demo"}, code: 1, want: "cannot reach Redis"},
			{args: []string{"inspect"}, code: 2, want: "requires at least 1 arg"},
			{args: []string{"nonsense"}, code: 2, want: `unknown command "nonsense"`},
			{args: []string{"demo", "--goroutines", "many"}, code: 2, want: "invalid argument"},
			{stdin: "n\n", args: []string{"--redis", srv.Addr, "force-unlock", locked}, code: 4, want: "declined"},
			{args: []string{"--redis", srv.Addr, "force-unlock", "--yes", unique("missing:")}, code: 3, want: "nothing to unlock"},
			{args: []string{"--redis", srv.Addr, "force-unlock", "-y", locked}, code: 0, want: "force-unlocked"},
		} {
			code, out, errOut := runBin(t, bin, c.env, c.stdin, c.args...)
			if code != c.code || !strings.Contains(out+errOut, c.want) {
				t.Errorf("%q: exit %d, want %d with %q", c.args, code, c.code, c.want)
			}
		}
	})

	t.Run("demo with --redis", func(t *testing.T) {
		product := unique("p")
		code, out, _ := runBin(t, bin, nil, "", "--redis", srv.Addr, "demo", "--product", product,
			"--processes", "2", "--goroutines", "3", "--stock", "150", "--think", "40ms", "--work", "1ms",
			"--report-every", "300ms")
		if code != 0 {
			t.Fatalf("exit %d, want 0", code)
		}
		checkSummary(t, out, 150)
		k := newDemoKeys(product)
		rc := srv.Client(t)
		for _, key := range append(k.data(), k.lock) {
			if redistest.Exists(t, rc, key) {
				t.Errorf("%s left behind", key)
			}
		}
	})

	for _, mode := range []string{"process", "container"} {
		t.Run("demo with a throwaway Redis in "+mode+" mode", func(t *testing.T) {
			code, out, errOut := runBin(t, bin, []string{"GOREDISSON_REDIS=" + mode}, "", "demo",
				"--processes", "2", "--goroutines", "2", "--stock", "60", "--think", "20ms", "--work", "1ms",
				"--report-every", "300ms")
			skipWithoutRedis(t, errOut)
			if code != 0 {
				t.Fatalf("exit %d, want 0", code)
			}
			checkSummary(t, out, 60)
			checkRemoved(t, errOut)
			checkNoProcessOf(t, bin)
		})

		t.Run("Ctrl-C removes the throwaway Redis in "+mode+" mode", func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, bin, "demo", "--stock", "100000", "--think", "50ms")
			cmd.Env = testEnv([]string{"GOREDISSON_REDIS=" + mode})
			var errBuf redistest.SyncBuffer
			stderr, _ := cmd.StderrPipe()
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			started := make(chan string, 1)
			readDone := make(chan struct{}) // closed at the end of stderr, before Wait closes the pipe
			go func() {
				defer close(readDone)
				sc := bufio.NewScanner(stderr)
				for sc.Scan() {
					errBuf.WriteString(sc.Text() + "\n")
					if strings.HasPrefix(sc.Text(), "throwaway Redis: ") {
						started <- sc.Text()
					}
				}
			}()
			var line string
			select {
			case line = <-started:
			case <-time.After(time.Minute):
				_ = cmd.Process.Kill()
				_ = cmd.Wait()
				skipWithoutRedis(t, errBuf.String())
				t.Fatalf("no throwaway Redis within a minute; stderr:\n%s", errBuf.String())
			}
			// Wait until the workers sell, then press Ctrl-C.
			addr := regexp.MustCompile(`on (127\.0\.0\.1:\d+)`).FindStringSubmatch(line)[1]
			rc, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{addr}, DisableCache: true})
			if err != nil {
				t.Fatal(err)
			}
			eventually(t, "the first sales", func() bool {
				n, err := rc.Do(context.Background(), rc.B().Scard().Key(newDemoKeys("42").orders).Build()).AsInt64()
				return err == nil && n > 0
			})
			rc.Close()
			if err := cmd.Process.Signal(os.Interrupt); err != nil {
				t.Fatal(err)
			}
			select {
			case <-readDone:
			case <-ctx.Done():
				t.Fatalf("stderr still open after Ctrl-C; so far:\n%s", errBuf.String())
			}
			err = cmd.Wait()
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != exitInterrupted {
				t.Errorf("exit %v, want %d", err, exitInterrupted)
			}
			t.Logf("stderr:\n%s", errBuf.String())
			if !strings.Contains(errBuf.String(), "goredisson: interrupted") {
				t.Error("no \"interrupted\" message")
			}
			checkRemoved(t, errBuf.String())
			checkNoProcessOf(t, bin)
		})
	}

	t.Run("no Redis anywhere", func(t *testing.T) {
		code, _, errOut := runBin(t, bin, []string{"GOREDISSON_REDIS=process", "PATH=" + t.TempDir()}, "", "demo")
		if code != 1 {
			t.Errorf("exit %d, want 1", code)
		}
		for _, want := range []string{"no Redis to run the demo against", "redis-server: not found in PATH",
			"apt-get install -y redis-server", "bash scripts/redis-image/build.sh", "goredisson demo --redis 127.0.0.1:6379"} {
			if !strings.Contains(errOut, want) {
				t.Errorf("stderr lacks %q", want)
			}
		}
	})
}

var summaryLines = []string{
	`(?m)^  initial stock +%d$`,
	`(?m)^  final stock +0 +ok: must be exactly 0$`,
	`(?m)^  units sold +%d +ok: sold == initial stock, no oversell$`,
	`(?m)^  orders recorded +%d +ok: one distinct order per unit sold, no duplicate order$`,
	`(?m)^  resent orders +\d+ +ok: `,
	`(?m)^  lock acquisitions +\d+ `,
	`(?m)^  fenced writes refused +0 `,
	`(?m)^  wait latency +(p50 \S+ +p90 \S+ +p99 \S+ |n/a)`,
	`(?m)^  report runs +\d+ +ok: `,
	`(?m)^Result: OK: final stock 0, no oversell, no duplicate order, one report per period$`,
	`(?m)^Without the lock: \d+ processes x \d+ goroutines sold \d+ units of a stock of \d+`, // the default run's contrast
}

func checkSummary(t *testing.T, out string, stock int) {
	t.Helper()
	for _, l := range summaryLines {
		if strings.Contains(l, "%d") {
			l = strings.ReplaceAll(l, "%d", strconv.Itoa(stock))
		}
		if !regexp.MustCompile(l).MatchString(out) {
			t.Errorf("summary lacks %s", l)
		}
	}
}

// skipWithoutRedis skips when the machine has neither Docker with the image nor redis-server.
func skipWithoutRedis(t *testing.T, stderr string) {
	t.Helper()
	if strings.Contains(stderr, "no Redis to run the demo against") || strings.Contains(stderr, "GOREDISSON_REDIS=container, but:") {
		t.Skipf("no throwaway Redis possible here:\n%s", stderr)
	}
}

// checkRemoved checks that the throwaway Redis named on stderr no longer exists.
func checkRemoved(t *testing.T, stderr string) {
	t.Helper()
	if !strings.Contains(stderr, "throwaway Redis removed (") {
		t.Errorf("stderr does not say the throwaway Redis was removed")
	}
	if m := regexp.MustCompile(`throwaway Redis: redis-server pid (\d+) `).FindStringSubmatch(stderr); m != nil {
		pid, _ := strconv.Atoi(m[1])
		if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
			t.Errorf("redis-server pid %d still exists (kill 0: %v)", pid, err)
		}
		return
	}
	m := regexp.MustCompile(`throwaway Redis: container ([0-9a-f]+) `).FindStringSubmatch(stderr)
	if m == nil {
		t.Fatalf("stderr names no throwaway Redis")
	}
	ctx := context.Background()
	cli, err := testcontainers.NewDockerClientWithOpts(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	if _, err := cli.ContainerInspect(ctx, m[1], client.ContainerInspectOptions{}); err == nil {
		t.Errorf("container %s still exists", m[1])
	}
}

// checkNoProcessOf checks that no process runs the binary bin any more (no worker left).
func checkNoProcessOf(t *testing.T, bin string) {
	t.Helper()
	exes, _ := filepath.Glob("/proc/[0-9]*/exe")
	for _, exe := range exes {
		if target, err := os.Readlink(exe); err == nil && target == bin {
			t.Errorf("process %s still runs %s", filepath.Dir(exe), bin)
		}
	}
}

// buildBinary builds the command into a temporary directory, race-enabled when the tests are.
func buildBinary(t *testing.T) string {
	t.Helper()
	goBin, err := exec.LookPath("go")
	if err != nil {
		goBin = filepath.Join(runtime.GOROOT(), "bin", "go")
	}
	bin := filepath.Join(t.TempDir(), "goredisson")
	args := []string{"build", "-o", bin}
	if raceEnabled {
		args = append(args, "-race")
	}
	out, err := exec.Command(goBin, append(args, ".")...).CombinedOutput()
	if err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// testEnv is this process's environment without REDIS_URL (a developer's own must not
// leak into the tests), plus extra.
func testEnv(extra []string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "REDIS_URL=") {
			env = append(env, kv)
		}
	}
	if _, ok := os.LookupEnv("GORACE"); !ok {
		env = append(env, "GORACE=atexit_sleep_ms=0") // a race binary otherwise sleeps 1 s at exit 0
	}
	return append(env, extra...)
}

// runBin runs the binary and returns its exit code, stdout and stderr.
func runBin(t *testing.T, bin string, env []string, stdin string, args ...string) (int, string, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = testEnv(env)
	cmd.Stdin = strings.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	start := time.Now()
	err := cmd.Run()
	code := 0
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		code = ee.ExitCode()
	case err != nil:
		t.Fatalf("run %s: %v", bin, err)
	}
	t.Logf("goredisson %s -> exit %d in %v\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), code,
		time.Since(start).Round(time.Millisecond), out.String(), errb.String())
	return code, out.String(), errb.String()
}

// closedAddr returns a loopback address where nothing listens.
func closedAddr(t *testing.T) string {
	t.Helper()
	port, err := redisserver.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	return "127.0.0.1:" + strconv.Itoa(port)
}
