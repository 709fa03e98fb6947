package redistest

import (
	"context"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/moby/moby/client"
	"github.com/testcontainers/testcontainers-go"
)

// Modes a [Server] can run in, as returned by [Server.Mode].
const (
	// ModeContainer runs Redis in a container of [Image] through testcontainers-go.
	ModeContainer = "container"
	// ModeProcess runs redis-server as a child process of the test binary.
	ModeProcess = "process"
	// modeAuto picks ModeContainer when Docker and the image are there, else ModeProcess.
	modeAuto = "auto"
)

// EnvMode is the environment variable that selects the mode: "container", "process"
// or "auto" (the default when it is unset or empty).
const EnvMode = "GOREDISSON_REDIS"

// Image is the locally built Redis image used in container mode. Build it with
// scripts/redis-image/build.sh; it is never pulled.
const Image = "goredisson/redis:7.0.15"

// buildHint tells how to get the image; it ends every "image missing" message.
const buildHint = "build it with `bash scripts/redis-image/build.sh` " +
	"(needs a running Docker engine; `bash .ci/run` does all of it on a fresh machine)"

// requestedMode returns the mode asked for in EnvMode: ModeContainer, ModeProcess or
// modeAuto. Any other value is an error.
func requestedMode() (string, error) {
	switch v := os.Getenv(EnvMode); v {
	case "", modeAuto:
		return modeAuto, nil
	case ModeContainer, ModeProcess:
		return v, nil
	default:
		return "", fmt.Errorf("redistest: %s=%q: want %q, %q or %q", EnvMode, v, ModeContainer, ModeProcess, modeAuto)
	}
}

// resolveMode turns the requested mode into the one to run, with a sentence saying
// why, for the log. It does not fail: an unusable explicit mode fails later, at start.
func resolveMode(requested string) (mode, why string) {
	switch requested {
	case ModeContainer:
		return ModeContainer, EnvMode + "=" + ModeContainer
	case ModeProcess:
		return ModeProcess, EnvMode + "=" + ModeProcess
	}
	if err := dockerReady(); err != nil {
		return ModeProcess, fmt.Sprintf("auto: no container because %v", err)
	}
	return ModeContainer, "auto: Docker engine answers and " + Image + " exists"
}

var dockerProbe struct {
	once sync.Once
	err  error
}

// dockerReady reports, once per test binary, whether a Docker engine answers and
// [Image] exists locally. A nil error means container mode can run.
func dockerReady() error {
	dockerProbe.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		dockerProbe.err = probeImage(ctx, Image)
	})
	return dockerProbe.err
}

// probeImage checks that a Docker engine answers and that image is present locally.
// The error says what is missing and how to fix it.
func probeImage(ctx context.Context, image string) error {
	setEnvDefaults()
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

var announced sync.Map // message -> struct{}{}

// announce logs, once per distinct message and test binary, which path runs Redis: to t's log
// (when t is not nil) and to stderr, so it is seen even without -v.
func announce(t testing.TB, mode, detail string) {
	msg := fmt.Sprintf("redistest: Redis runs in %s mode (%s)", mode, detail)
	if _, loaded := announced.LoadOrStore(msg, struct{}{}); loaded {
		return
	}
	if t != nil {
		t.Log(msg)
	}
	fmt.Fprintln(os.Stderr, msg)
}
