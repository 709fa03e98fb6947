package main

import (
	"context"
	"errors"
	"fmt"
	"strings"

	tclog "github.com/testcontainers/testcontainers-go/log"

	"github.com/goredisson/goredisson/integration/rediscontainer"
	"github.com/goredisson/goredisson/internal/redisserver"
)

// demoLabel marks the demo's containers, so that leftovers of a killed run can be found:
// docker ps -a --filter label=io.goredisson.demo
const demoLabel = "io.goredisson.demo"

// startThrowaway starts a Redis on 127.0.0.1 in the way GOREDISSON_REDIS asks for, as the
// project's tests do: by default a container of rediscontainer.Image when a Docker engine
// answers and the image exists, else (also when that container does not start) a
// redis-server from PATH. The error says how to get either when neither works; a bad
// GOREDISSON_REDIS is a usage error.
func startThrowaway(ctx context.Context) (*redisserver.Server, error) {
	mode, err := redisserver.RequestedMode()
	if err != nil {
		return nil, withCode(exitUsage, err)
	}
	tclog.SetDefault(tclog.NewNoopLogger()) // its chatter would hide the demo's output
	rediscontainer.Use()
	srv, err := redisserver.Start(ctx, redisserver.Options{
		Mode:      mode,
		FallBack:  true,
		Container: redisserver.ContainerOptions{Labels: map[string]string{demoLabel: "true"}},
	})
	var ue *redisserver.UnavailableError
	if err == nil || ctx.Err() != nil || !errors.As(err, &ue) {
		return srv, err
	}
	if mode == redisserver.ModeContainer {
		return nil, fmt.Errorf("%s=container, but: %w", redisserver.EnvMode, ue.Container)
	}
	return nil, noRedisError(ue)
}

// noRedisError tells why no throwaway Redis could start, and how to get one.
func noRedisError(ue *redisserver.UnavailableError) error {
	containerWhy := fmt.Sprintf("not tried (%s=%s)", redisserver.EnvMode, redisserver.ModeProcess)
	if ue.Container != nil {
		containerWhy = strings.ReplaceAll(ue.Container.Error(), "\n", " ")
	}
	processWhy := "not found in PATH"
	if !errors.Is(ue.Process, redisserver.ErrNoRedisServer) {
		processWhy = strings.ReplaceAll(ue.Process.Error(), "\n", "\n      ")
	}
	return fmt.Errorf(`no Redis to run the demo against: neither --redis nor REDIS_URL is set, and no throwaway Redis could start:
  - Docker: %s
  - redis-server: %s
Do one of these, then run the demo again:
  - install Redis (the demo runs it on a free loopback port and stops it at the end):
        apt-get install -y redis-server
  - or use Docker with the locally built image %s:
        dockerd --iptables=false --ip-forward=false --ip-masq=false &
        bash scripts/redis-image/build.sh
  - or point the demo at a Redis you run:
        goredisson demo --redis 127.0.0.1:6379`, containerWhy, processWhy, rediscontainer.Image)
}
