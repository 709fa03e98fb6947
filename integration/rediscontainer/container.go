package rediscontainer

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"net/netip"
	"os"
	"strconv"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/network"
	"github.com/moby/moby/client"
	"github.com/testcontainers/testcontainers-go"
	tclog "github.com/testcontainers/testcontainers-go/log"
	tcredis "github.com/testcontainers/testcontainers-go/modules/redis"

	"github.com/goredisson/goredisson/internal/redisserver"
)

// redisPort is the port Redis listens on inside the container.
var redisPort = network.MustParsePort("6379/tcp")

// Container is Redis in a container of [Image], published on 127.0.0.1 at a host port
// chosen up front, so that a stopped and started container keeps its address.
//
// It is a [redisserver.Container]. Its methods are not safe for concurrent use.
type Container struct {
	c    *tcredis.RedisContainer
	cli  *testcontainers.DockerClient // for kill, pause, unpause
	addr string                       // 127.0.0.1:port

	stopped bool
}

// Start creates and starts a container of [Image] and returns once Redis answers PING on
// its loopback address. Its labels are opts.Labels and, when [EnvRun] is set, [RunLabel];
// opts.Logger (nil: none) receives testcontainers' lines about it. It fails at once,
// saying what is missing, unless [DockerReady] returns nil.
func Start(ctx context.Context, opts redisserver.ContainerOptions) (*Container, error) {
	if err := DockerReady(); err != nil {
		return nil, fmt.Errorf("container mode unavailable: %w", err)
	}
	port, err := redisserver.FreePort()
	if err != nil {
		return nil, err
	}
	hostPort := strconv.Itoa(port)
	var logger tclog.Logger = tclog.NewNoopLogger()
	if opts.Logger != nil {
		logger = opts.Logger
	}
	labels := maps.Clone(opts.Labels)
	if run := os.Getenv(EnvRun); run != "" {
		if labels == nil {
			labels = map[string]string{}
		}
		labels[RunLabel] = run
	}
	customize := []testcontainers.ContainerCustomizer{
		testcontainers.WithLogger(logger),
		testcontainers.WithHostConfigModifier(func(hc *container.HostConfig) {
			hc.PortBindings = network.PortMap{redisPort: {{
				HostIP:   netip.AddrFrom4([4]byte{127, 0, 0, 1}),
				HostPort: hostPort,
			}}}
		}),
	}
	if len(labels) > 0 {
		customize = append(customize, testcontainers.WithLabels(labels))
	}
	c, err := tcredis.Run(ctx, Image, customize...)
	if err != nil {
		if c != nil {
			_ = c.Terminate(context.WithoutCancel(ctx))
		}
		return nil, fmt.Errorf("run a container of %s on 127.0.0.1:%s: %w", Image, hostPort, err)
	}
	k := &Container{c: c, addr: net.JoinHostPort("127.0.0.1", hostPort)}
	if err := k.check(ctx, hostPort); err != nil {
		_ = k.Stop(context.WithoutCancel(ctx))
		return nil, err
	}
	return k, nil
}

// check opens the Docker client used for faults, verifies the published address and waits
// for PONG through it.
func (k *Container) check(ctx context.Context, hostPort string) error {
	cli, err := testcontainers.NewDockerClientWithOpts(ctx)
	if err != nil {
		return fmt.Errorf("docker client: %w", err)
	}
	k.cli = cli
	mapped, err := k.c.MappedPort(ctx, redisPort.String())
	if err != nil {
		return fmt.Errorf("mapped port: %w", err)
	}
	if mapped.Port() != hostPort {
		return fmt.Errorf("the container published 6379 on host port %s, want %s", mapped.Port(), hostPort)
	}
	return redisserver.WaitPing(ctx, k.addr)
}

// Addr returns the 127.0.0.1:port the server is published on. It stays the same across
// Kill and Restart.
func (k *Container) Addr() string { return k.addr }

// ID returns the container's ID.
func (k *Container) ID() string { return k.c.GetContainerID() }

// Describe names the container for a person: "container 0123456789ab of
// goredisson/redis:7.0.15".
func (k *Container) Describe() string {
	return fmt.Sprintf("container %s of %s", k.ID()[:min(12, len(k.ID()))], Image)
}

// state returns the container's state as the engine reports it.
func (k *Container) state(ctx context.Context) (*container.State, error) {
	st, err := k.c.State(ctx)
	if err != nil {
		return nil, fmt.Errorf("inspect container: %w", err)
	}
	return st, nil
}

// waitState polls the engine until want accepts the container's state.
func (k *Container) waitState(ctx context.Context, what string, want func(*container.State) bool) error {
	return redisserver.Poll(ctx, "container "+what, func() error {
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

// Kill sends SIGKILL to the container (unpausing it first: the engine refuses to kill a
// paused container) and returns once the engine reports it not running; connections to
// Addr are then refused. It returns nil at once when the container does not run.
func (k *Container) Kill(ctx context.Context) error {
	st, err := k.state(ctx)
	if err != nil {
		return err
	}
	if !st.Running {
		return nil
	}
	if st.Paused {
		if _, err := k.cli.ContainerUnpause(ctx, k.ID(), client.ContainerUnpauseOptions{}); err != nil {
			return fmt.Errorf("unpause before kill: %w", err)
		}
	}
	if _, err := k.cli.ContainerKill(ctx, k.ID(), client.ContainerKillOptions{Signal: "SIGKILL"}); err != nil {
		return fmt.Errorf("kill container: %w", err)
	}
	return k.waitState(ctx, "not running", func(st *container.State) bool { return !st.Running })
}

// Restart kills the container if it runs, starts it again (same host port, empty data)
// and returns once it answers PING.
func (k *Container) Restart(ctx context.Context) error {
	if err := k.Kill(ctx); err != nil {
		return err
	}
	if err := k.c.Start(ctx); err != nil {
		return fmt.Errorf("start the container again on %s: %w", k.addr, err)
	}
	return redisserver.WaitPing(ctx, k.addr)
}

// Pause freezes the container (docker pause) and returns once the engine reports it
// paused. Connections stay open and new ones may still be accepted by Docker's proxy, but
// no command is answered until [Container.Resume].
func (k *Container) Pause(ctx context.Context) error {
	if _, err := k.cli.ContainerPause(ctx, k.ID(), client.ContainerPauseOptions{}); err != nil {
		return fmt.Errorf("pause container: %w", err)
	}
	return k.waitState(ctx, "paused", func(st *container.State) bool { return st.Paused })
}

// Resume thaws the container (docker unpause) and returns once it runs and answers PING.
func (k *Container) Resume(ctx context.Context) error {
	if _, err := k.cli.ContainerUnpause(ctx, k.ID(), client.ContainerUnpauseOptions{}); err != nil {
		return fmt.Errorf("unpause container: %w", err)
	}
	if err := k.waitState(ctx, "running", func(st *container.State) bool { return st.Running && !st.Paused }); err != nil {
		return err
	}
	return redisserver.WaitPing(ctx, k.addr)
}

// Stop removes the container (unpausing it first) and closes the Docker client. Calling it
// again is harmless.
func (k *Container) Stop(ctx context.Context) error {
	if k.stopped {
		return nil
	}
	k.stopped = true
	var errs []error
	if k.cli != nil {
		if st, err := k.state(ctx); err == nil && st.Paused {
			_, err := k.cli.ContainerUnpause(ctx, k.ID(), client.ContainerUnpauseOptions{})
			errs = append(errs, err)
		}
	}
	errs = append(errs, k.c.Terminate(ctx))
	if k.cli != nil {
		errs = append(errs, k.cli.Close())
		k.cli = nil
	}
	return errors.Join(errs...)
}
