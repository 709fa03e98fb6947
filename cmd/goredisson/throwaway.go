package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/network"
	"github.com/moby/moby/client"
	"github.com/testcontainers/testcontainers-go"
	tclog "github.com/testcontainers/testcontainers-go/log"
	tcredis "github.com/testcontainers/testcontainers-go/modules/redis"
)

// redisImage is the locally built image (scripts/redis-image/build.sh); it is never pulled.
const redisImage = "goredisson/redis:7.0.15"

// demoLabel marks the demo's containers, so that leftovers of a killed run can be found:
// docker ps -a --filter label=io.goredisson.demo
const demoLabel = "io.goredisson.demo"

// throwaway is a Redis that the demo started for itself and removes on exit.
type throwaway struct {
	addr        string // 127.0.0.1:port
	kind        string // "container" or "process"
	pid         int    // process mode: the redis-server pid
	containerID string // container mode
	stop        func(context.Context) error
}

// describe says what runs, for the user (and the tests, which parse "pid N" and "container ID").
func (t *throwaway) describe() string {
	if t.kind == "container" {
		return fmt.Sprintf("container %s of %s", shortID(t.containerID), redisImage)
	}
	return fmt.Sprintf("redis-server pid %d", t.pid)
}

func shortID(id string) string { return id[:min(12, len(id))] }

// envRedisMode chooses how the throwaway Redis runs, as it does for the project's tests
// (internal/redistest): "container", "process", or "auto" (the default).
const envRedisMode = "GOREDISSON_REDIS"

// startThrowaway starts a Redis on 127.0.0.1: a container of redisImage when a Docker
// engine answers and the image exists, else a redis-server from PATH. The error says how to
// get either when neither works.
func startThrowaway(ctx context.Context) (*throwaway, error) {
	mode := os.Getenv(envRedisMode)
	var dockerErr error
	switch mode {
	case "", "auto", "container":
		setTestcontainersEnv()
		if dockerErr = probeDocker(ctx); dockerErr == nil {
			t, err := startContainer(ctx)
			if err == nil || ctx.Err() != nil {
				return t, err
			}
			dockerErr = err
		}
		if mode == "container" {
			return nil, fmt.Errorf("%s=container, but: %w", envRedisMode, dockerErr)
		}
	case "process":
		dockerErr = fmt.Errorf("not tried (%s=process)", envRedisMode)
	default:
		return nil, usagef("%s=%q: want container, process or auto", envRedisMode, mode)
	}
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		return nil, noRedisError(dockerErr, "not found in PATH")
	}
	t, err := startProcess(ctx, bin)
	if err != nil {
		if ctx.Err() != nil {
			return nil, err
		}
		return nil, noRedisError(dockerErr, err.Error())
	}
	return t, nil
}

func noRedisError(dockerErr error, processWhy string) error {
	return fmt.Errorf(`no Redis to run the demo against: neither --redis nor REDIS_URL is set, and no throwaway Redis could start:
  - Docker: %v
  - redis-server: %s
Do one of these, then run the demo again:
  - install Redis (the demo runs it on a free loopback port and stops it at the end):
        apt-get install -y redis-server
  - or use Docker with the locally built image %s:
        dockerd --iptables=false --ip-forward=false --ip-masq=false &
        bash scripts/redis-image/build.sh
  - or point the demo at a Redis you run:
        goredisson demo --redis 127.0.0.1:6379`, dockerErr, processWhy, redisImage)
}

// setTestcontainersEnv defaults what testcontainers needs on these machines: no reaper
// (its image cannot be pulled; the demo removes its container itself) and loopback as the
// container host (with /.dockerenv present it would otherwise dial the default gateway).
func setTestcontainersEnv() {
	for k, v := range map[string]string{
		"TESTCONTAINERS_RYUK_DISABLED": "true",
		"TESTCONTAINERS_HOST_OVERRIDE": "127.0.0.1",
	} {
		if _, ok := os.LookupEnv(k); !ok {
			_ = os.Setenv(k, v)
		}
	}
	tclog.SetDefault(tclog.NewNoopLogger()) // its chatter would hide the demo's output
}

// probeDocker returns nil when a Docker engine answers and redisImage exists locally.
func probeDocker(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	cli, err := testcontainers.NewDockerClientWithOpts(ctx)
	if err != nil {
		return fmt.Errorf("no Docker engine answers (%v)", oneLine(err))
	}
	defer cli.Close()
	if _, err := cli.Ping(ctx, client.PingOptions{}); err != nil {
		return fmt.Errorf("the Docker engine does not answer a ping (%v)", oneLine(err))
	}
	if _, err := cli.ImageInspect(ctx, redisImage); err != nil {
		return fmt.Errorf("image %s is missing; build it with `bash scripts/redis-image/build.sh`", redisImage)
	}
	return nil
}

func oneLine(err error) string { return strings.ReplaceAll(err.Error(), "\n", " ") }

// startContainer runs redisImage published on 127.0.0.1 only.
func startContainer(ctx context.Context) (*throwaway, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	redisPort := network.MustParsePort("6379/tcp")
	labels := map[string]string{demoLabel: "true"}
	if run := os.Getenv("GOREDISSON_RUN"); run != "" {
		labels["io.goredisson.run"] = run // lets .ci/run remove a killed run's leftovers
	}
	c, err := tcredis.Run(ctx, redisImage,
		testcontainers.WithLogger(tclog.NewNoopLogger()),
		testcontainers.WithLabels(labels),
		testcontainers.WithHostConfigModifier(func(hc *container.HostConfig) {
			hc.PortBindings = network.PortMap{redisPort: {{
				HostIP:   netip.AddrFrom4([4]byte{127, 0, 0, 1}),
				HostPort: strconv.Itoa(port),
			}}}
		}))
	if err != nil {
		if c != nil {
			_ = c.Terminate(context.WithoutCancel(ctx))
		}
		return nil, fmt.Errorf("container of %s did not start: %v", redisImage, oneLine(err))
	}
	t := &throwaway{
		addr:        net.JoinHostPort("127.0.0.1", strconv.Itoa(port)),
		kind:        "container",
		containerID: c.GetContainerID(),
		stop:        func(ctx context.Context) error { return c.Terminate(ctx) },
	}
	if err := waitPing(ctx, t.addr, 30*time.Second, nil); err != nil {
		_ = t.stop(context.WithoutCancel(ctx))
		return nil, err
	}
	return t, nil
}

// startProcess runs redis-server on a free loopback port, without persistence, in a
// temporary directory. It is killed by pid on stop, and by the kernel if this process dies
// (Linux).
func startProcess(ctx context.Context, bin string) (*throwaway, error) {
	dir, err := os.MkdirTemp("", "goredisson-demo-redis-")
	if err != nil {
		return nil, err
	}
	logFile := filepath.Join(dir, "redis.log")
	for range 5 {
		port, err := freePort()
		if err != nil {
			_ = os.RemoveAll(dir)
			return nil, err
		}
		cmd := exec.Command(bin,
			"--port", strconv.Itoa(port), "--bind", "127.0.0.1",
			"--save", "", "--appendonly", "no", "--daemonize", "no",
			"--dir", dir, "--logfile", logFile)
		cmd.SysProcAttr = childAttr() // own process group: Ctrl-C reaches us, and we stop it
		if err := cmd.Start(); err != nil {
			_ = os.RemoveAll(dir)
			return nil, fmt.Errorf("start %s: %w", bin, err)
		}
		exited := make(chan struct{})
		go func() { _ = cmd.Wait(); close(exited) }()
		t := &throwaway{
			addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)),
			kind: "process",
			pid:  cmd.Process.Pid,
			stop: func(context.Context) error {
				err := cmd.Process.Kill()
				<-exited
				if errors.Is(err, os.ErrProcessDone) {
					err = nil
				}
				return errors.Join(err, os.RemoveAll(dir))
			},
		}
		err = waitPing(ctx, t.addr, 10*time.Second, exited)
		if err == nil {
			return t, nil
		}
		_ = cmd.Process.Kill()
		<-exited
		tail := logTail(logFile)
		if ctx.Err() != nil || !strings.Contains(tail, "Address already in use") {
			_ = os.RemoveAll(dir)
			return nil, fmt.Errorf("%s on 127.0.0.1:%d: %v; its log ends with:\n%s", bin, port, err, indent(tail, "    "))
		}
	}
	_ = os.RemoveAll(dir)
	return nil, fmt.Errorf("%s: no free loopback port after 5 attempts", bin)
}

// freePort returns a TCP port that was free on 127.0.0.1 a moment ago.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("pick a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// waitPing polls addr until it answers PING, the process exits (exited closed), ctx ends or
// limit passes.
func waitPing(ctx context.Context, addr string, limit time.Duration, exited <-chan struct{}) error {
	deadline := time.Now().Add(limit)
	for {
		err := ping(addr)
		if err == nil {
			return nil
		}
		select {
		case <-exited:
			return errors.New("it exited at start")
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("no PONG from %s within %v: %v", addr, limit, err)
		}
	}
}

func ping(addr string) error {
	conn, err := net.DialTimeout("tcp", addr, 500*time.Millisecond)
	if err != nil {
		return err
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(500 * time.Millisecond))
	if _, err := conn.Write([]byte("PING\r\n")); err != nil {
		return err
	}
	line, err := bufio.NewReader(conn).ReadString('\n')
	if err != nil {
		return err
	}
	if strings.TrimSpace(line) != "+PONG" {
		return fmt.Errorf("PING replied %q", strings.TrimSpace(line))
	}
	return nil
}

func logTail(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return "(no log: " + err.Error() + ")"
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	return strings.Join(lines[max(0, len(lines)-10):], "\n")
}
