package redistest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/network"
	"github.com/moby/moby/client"
	"github.com/testcontainers/testcontainers-go"
	tclog "github.com/testcontainers/testcontainers-go/log"
	tcredis "github.com/testcontainers/testcontainers-go/modules/redis"
)

// EnvRun names a test run; when set, its value labels every container under
// [RunLabel], so that the run's containers can be removed without touching those
// of other runs (.ci/run sets it).
const EnvRun = "GOREDISSON_RUN"

// RunLabel is the container label that holds the value of [EnvRun].
const RunLabel = "io.goredisson.run"

// redisPort is the port Redis listens on inside the container.
var redisPort = network.MustParsePort("6379/tcp")

// ctr runs Redis in a container of [Image], published on 127.0.0.1 at a host port
// chosen up front, so that a stopped and started container keeps its address.
type ctr struct {
	c    *tcredis.RedisContainer
	cli  *testcontainers.DockerClient // for kill, pause, unpause
	addr string                       // 127.0.0.1:port
	log  *switchLogger
}

// startContainer creates and starts a container of [Image] and returns once Redis
// answers PING on its loopback address. Logs of testcontainers go to logger.
func startContainer(ctx context.Context, logger *switchLogger) (*ctr, error) {
	if err := dockerReady(); err != nil {
		return nil, fmt.Errorf("redistest: container mode unavailable: %w", err)
	}
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	hostPort := strconv.Itoa(port)
	opts := []testcontainers.ContainerCustomizer{
		testcontainers.WithLogger(logger),
		testcontainers.WithHostConfigModifier(func(hc *container.HostConfig) {
			hc.PortBindings = network.PortMap{redisPort: {{
				HostIP:   netip.AddrFrom4([4]byte{127, 0, 0, 1}),
				HostPort: hostPort,
			}}}
		}),
	}
	if run := os.Getenv(EnvRun); run != "" {
		opts = append(opts, testcontainers.WithLabels(map[string]string{RunLabel: run}))
	}
	c, err := tcredis.Run(ctx, Image, opts...)
	if err != nil {
		if c != nil {
			_ = c.Terminate(context.WithoutCancel(ctx))
		}
		return nil, fmt.Errorf("redistest: run container of %s on 127.0.0.1:%s: %w", Image, hostPort, err)
	}
	k := &ctr{c: c, addr: net.JoinHostPort("127.0.0.1", hostPort), log: logger}
	if err := k.check(ctx, hostPort); err != nil {
		_ = k.terminate(context.WithoutCancel(ctx))
		return nil, err
	}
	return k, nil
}

// check opens the Docker client used for faults, verifies the published address and
// waits for PONG through it.
func (k *ctr) check(ctx context.Context, hostPort string) error {
	cli, err := testcontainers.NewDockerClientWithOpts(ctx)
	if err != nil {
		return fmt.Errorf("redistest: docker client: %w", err)
	}
	k.cli = cli
	mapped, err := k.c.MappedPort(ctx, redisPort.String())
	if err != nil {
		return fmt.Errorf("redistest: mapped port: %w", err)
	}
	if mapped.Port() != hostPort {
		return fmt.Errorf("redistest: container published 6379 on host port %s, want %s", mapped.Port(), hostPort)
	}
	return waitPing(ctx, k.addr)
}

// state returns the container's state as the engine reports it.
func (k *ctr) state(ctx context.Context) (*container.State, error) {
	st, err := k.c.State(ctx)
	if err != nil {
		return nil, fmt.Errorf("redistest: inspect container: %w", err)
	}
	return st, nil
}

// waitState polls the engine until want accepts the container's state.
func (k *ctr) waitState(ctx context.Context, what string, want func(*container.State) bool) error {
	return poll(ctx, "container "+what, func() error {
		st, err := k.state(ctx)
		if err != nil {
			return err
		}
		if !want(st) {
			return fmt.Errorf("status %s", st.Status)
		}
		return nil
	})
}

// kill sends SIGKILL to the container (unpausing it first: the engine refuses to
// kill a paused container) and waits until it is no longer running.
func (k *ctr) kill(ctx context.Context) error {
	st, err := k.state(ctx)
	if err != nil {
		return err
	}
	if !st.Running {
		return nil
	}
	if st.Paused {
		if _, err := k.cli.ContainerUnpause(ctx, k.c.GetContainerID(), client.ContainerUnpauseOptions{}); err != nil {
			return fmt.Errorf("redistest: unpause before kill: %w", err)
		}
	}
	if _, err := k.cli.ContainerKill(ctx, k.c.GetContainerID(), client.ContainerKillOptions{Signal: "SIGKILL"}); err != nil {
		return fmt.Errorf("redistest: kill container: %w", err)
	}
	return k.waitState(ctx, "not running", func(st *container.State) bool { return !st.Running })
}

// restart starts the stopped container again (same host port binding, empty data)
// and waits for PONG.
func (k *ctr) restart(ctx context.Context) error {
	if err := k.c.Start(ctx); err != nil {
		return fmt.Errorf("redistest: start container again on %s: %w", k.addr, err)
	}
	return waitPing(ctx, k.addr)
}

// pause freezes the container (docker pause) and waits until the engine reports it paused.
func (k *ctr) pause(ctx context.Context) error {
	if _, err := k.cli.ContainerPause(ctx, k.c.GetContainerID(), client.ContainerPauseOptions{}); err != nil {
		return fmt.Errorf("redistest: pause container: %w", err)
	}
	return k.waitState(ctx, "paused", func(st *container.State) bool { return st.Paused })
}

// resume thaws the container (docker unpause) and waits until it is running and
// answers PING.
func (k *ctr) resume(ctx context.Context) error {
	if _, err := k.cli.ContainerUnpause(ctx, k.c.GetContainerID(), client.ContainerUnpauseOptions{}); err != nil {
		return fmt.Errorf("redistest: unpause container: %w", err)
	}
	if err := k.waitState(ctx, "running", func(st *container.State) bool { return st.Running && !st.Paused }); err != nil {
		return err
	}
	return waitPing(ctx, k.addr)
}

// terminate removes the container (unpausing it first) and closes the Docker client.
func (k *ctr) terminate(ctx context.Context) error {
	var errs []error
	if k.cli != nil {
		if st, err := k.state(ctx); err == nil && st.Paused {
			_, err := k.cli.ContainerUnpause(ctx, k.c.GetContainerID(), client.ContainerUnpauseOptions{})
			errs = append(errs, err)
		}
	}
	errs = append(errs, k.c.Terminate(ctx))
	if k.cli != nil {
		errs = append(errs, k.cli.Close())
	}
	k.log.detach()
	return errors.Join(errs...)
}

// switchLogger sends testcontainers' log lines to a test's log while that test runs
// and to stderr after detach (a test's log must not be written once it has ended).
type switchLogger struct {
	tb atomic.Pointer[testing.TB]
}

var _ tclog.Logger = (*switchLogger)(nil)

func newSwitchLogger(tb testing.TB) *switchLogger {
	l := &switchLogger{}
	if tb != nil {
		l.tb.Store(&tb)
	}
	return l
}

// Printf implements tclog.Logger.
func (l *switchLogger) Printf(format string, v ...any) {
	if tb := l.tb.Load(); tb != nil {
		(*tb).Helper()
		(*tb).Logf(format, v...)
		return
	}
	fmt.Fprintf(os.Stderr, format+"\n", v...)
}

// detach sends later lines to stderr.
func (l *switchLogger) detach() { l.tb.Store(nil) }
