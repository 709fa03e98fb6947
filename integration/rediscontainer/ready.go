package rediscontainer

import (
	"context"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/moby/moby/client"
	"github.com/testcontainers/testcontainers-go"
)

// Image is the locally built Redis image the containers run. Build it with
// scripts/redis-image/build.sh; it is never pulled.
const Image = "goredisson/redis:7.0.15"

// EnvRun names a test run; when set, its value labels every container under [RunLabel], so
// that the run's containers can be removed without touching those of other runs (.ci/run
// sets it).
const EnvRun = "GOREDISSON_RUN"

// RunLabel is the container label that holds the value of [EnvRun].
const RunLabel = "io.goredisson.run"

// buildHint tells how to get the image; it ends every "image missing" message.
const buildHint = "build it with `bash scripts/redis-image/build.sh` " +
	"(needs a running Docker engine; `bash .ci/run` does all of it on a fresh machine)"

// probeTimeout bounds the one look at the Docker engine of [DockerReady].
const probeTimeout = 10 * time.Second

var dockerProbe struct {
	once sync.Once
	err  error
}

// DockerReady reports, once per process (the first answer is kept), whether a Docker
// engine answers and [Image] exists locally. A nil error means containers can start;
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
// use); [Use], [ProbeImage] and [Start] call it.
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
