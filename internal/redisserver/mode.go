package redisserver

import (
	"context"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/moby/moby/client"
	"github.com/testcontainers/testcontainers-go"
)

// Ways a [Server] can run, as [Options.Mode], [EnvMode] and [Server.Mode] name them.
const (
	// ModeContainer runs Redis in a container of [Image] through testcontainers-go.
	ModeContainer = "container"
	// ModeProcess runs redis-server as a child process.
	ModeProcess = "process"
	// ModeAuto picks ModeContainer when a Docker engine answers and [Image] exists, else
	// ModeProcess.
	ModeAuto = "auto"
)

// EnvMode is the environment variable that selects the mode when [Options.Mode] is empty:
// "container", "process" or "auto" (the default when it is unset or empty).
const EnvMode = "GOREDISSON_REDIS"

// Image is the locally built Redis image of container mode. Build it with
// scripts/redis-image/build.sh; it is never pulled.
const Image = "goredisson/redis:7.0.15"

// buildHint tells how to get the image; it ends every "image missing" message.
const buildHint = "build it with `bash scripts/redis-image/build.sh` " +
	"(needs a running Docker engine; `bash .ci/run` does all of it on a fresh machine)"

// probeTimeout bounds the one look at the Docker engine of [DockerReady].
const probeTimeout = 10 * time.Second

// RequestedMode returns the mode asked for in [EnvMode]: [ModeContainer], [ModeProcess]
// or [ModeAuto]. Any other value is an error that names the variable and the valid values.
func RequestedMode() (string, error) {
	switch v := os.Getenv(EnvMode); v {
	case "", ModeAuto:
		return ModeAuto, nil
	case ModeContainer, ModeProcess:
		return v, nil
	default:
		return "", fmt.Errorf("%s=%q: want %q, %q or %q", EnvMode, v, ModeContainer, ModeProcess, ModeAuto)
	}
}

var dockerProbe struct {
	once sync.Once
	err  error
}

// DockerReady reports, once per process (the first answer is kept), whether a Docker
// engine answers and [Image] exists locally. A nil error means container mode can run;
// otherwise the error says what is missing and how to get it.
func DockerReady() error {
	dockerProbe.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), probeTimeout)
		defer cancel()
		dockerProbe.err = ProbeImage(ctx, Image)
	})
	return dockerProbe.err
}

// ProbeImage checks that a Docker engine answers and that image is present locally. The
// error says what is missing and how to fix it.
func ProbeImage(ctx context.Context, image string) error {
	SetTestcontainersEnv()
	cli, err := testcontainers.NewDockerClientWithOpts(ctx)
	if err != nil {
		return fmt.Errorf("no Docker engine answers (%v); start one with `dockerd --iptables=false --ip-forward=false --ip-masq=false` or run `bash .ci/run`", err)
	}
	defer cli.Close()
	if _, err := cli.Ping(ctx, client.PingOptions{}); err != nil {
		return fmt.Errorf("the Docker engine does not answer a ping: %v", err)
	}
	if _, err := cli.ImageInspect(ctx, image); err != nil {
		return fmt.Errorf("image %s is missing (%v); %s", image, err, buildHint)
	}
	return nil
}

// SetTestcontainersEnv sets the testcontainers variables these machines need unless they
// are already set: TESTCONTAINERS_RYUK_DISABLED=true (the reaper's image cannot be pulled)
// and TESTCONTAINERS_HOST_OVERRIDE=127.0.0.1 (/.dockerenv would make it dial the gateway).
// It must run before testcontainers reads its configuration (once per process, on first
// use); [ProbeImage] and [StartContainer] call it.
func SetTestcontainersEnv() {
	for k, v := range map[string]string{
		"TESTCONTAINERS_RYUK_DISABLED": "true",
		"TESTCONTAINERS_HOST_OVERRIDE": "127.0.0.1",
	} {
		if _, ok := os.LookupEnv(k); !ok {
			_ = os.Setenv(k, v)
		}
	}
}
