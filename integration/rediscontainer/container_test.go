package rediscontainer

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/client"
	"github.com/redis/rueidis"
	"github.com/testcontainers/testcontainers-go"

	"github.com/goredisson/goredisson/internal/redisserver"
	"github.com/goredisson/goredisson/internal/redistest"
)

func TestMain(m *testing.M) {
	Use()
	redistest.Main(m)
}

// startContainer starts a container through internal/redisserver, as the tests' harness
// does, and stops it in t.Cleanup. Without a Docker engine and the image it skips t,
// unless CI is set or GOREDISSON_REDIS=container: then it fails.
func startContainer(t *testing.T, opts redisserver.ContainerOptions) *redisserver.Server {
	t.Helper()
	if err := DockerReady(); err != nil {
		if os.Getenv("CI") != "" || os.Getenv(redisserver.EnvMode) == redisserver.ModeContainer {
			t.Fatalf("container mode must run here: %v", err)
		}
		t.Skipf("container mode unavailable: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s, err := redisserver.Start(ctx, redisserver.Options{Mode: redisserver.ModeContainer, Container: opts})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Stop(context.Background()); err != nil {
			t.Error(err)
		}
	})
	t.Logf("%s on %s (%s)", s.Describe(), s.Addr, s.How)
	return s
}

func TestContainerCarriesLabelsAndStopRemovesIt(t *testing.T) {
	t.Setenv(EnvRun, "rediscontainer-test")
	s := startContainer(t, redisserver.ContainerOptions{Labels: map[string]string{"io.goredisson.test": "yes"}})
	ctx := redistest.Context(t, time.Minute)
	if s.Mode != redisserver.ModeContainer {
		t.Fatalf("Mode = %q, want %q", s.Mode, redisserver.ModeContainer)
	}
	id, ok := strings.CutPrefix(strings.TrimSuffix(s.Describe(), " of "+Image), "container ")
	if !ok || len(id) != 12 {
		t.Fatalf("Describe() = %q, want \"container <12 hex> of %s\"", s.Describe(), Image)
	}
	cli, err := testcontainers.NewDockerClientWithOpts(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	info, err := cli.ContainerInspect(ctx, id, client.ContainerInspectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if l := info.Container.Config.Labels; l["io.goredisson.test"] != "yes" || l[RunLabel] != "rediscontainer-test" {
		t.Errorf("labels %v, want io.goredisson.test=yes and %s=rediscontainer-test", l, RunLabel)
	}
	if err := redisserver.Ping(s.Addr, time.Second); err != nil {
		t.Fatalf("PING: %v", err)
	}
	if err := s.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := cli.ContainerInspect(ctx, id, client.ContainerInspectOptions{}); err == nil {
		t.Errorf("container %s still exists after Stop", id)
	}
}

// TestFaults pauses, resumes, kills and restarts one container: a paused server answers
// nothing and keeps its data; a killed one refuses connections; a restarted one is empty
// on the same address.
func TestFaults(t *testing.T) {
	s := startContainer(t, redisserver.ContainerOptions{})
	ctx := redistest.Context(t, time.Minute)
	addr := s.Addr
	c, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{addr}, DisableCache: true})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	redistest.Do(t, c, c.B().Set().Key("k").Value("v").Build())

	if err := s.Pause(ctx); err != nil {
		t.Fatal(err)
	}
	short, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	err = c.Do(short, c.B().Get().Key("k").Build()).Error()
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("GET on a paused server = %v, want context.DeadlineExceeded", err)
	}
	if err := s.Resume(ctx); err != nil {
		t.Fatal(err)
	}
	if got, err := redistest.Do(t, c, c.B().Get().Key("k").Build()).ToString(); err != nil || got != "v" {
		t.Fatalf("GET after Resume = %q, %v; want the value kept across the pause", got, err)
	}

	if err := s.Pause(ctx); err != nil {
		t.Fatal(err)
	}
	if err := s.Kill(ctx); err != nil {
		t.Fatal(err)
	}
	if err := redisserver.Ping(addr, 300*time.Millisecond); err == nil {
		t.Fatal("PING answered after Kill")
	}
	if err := s.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	if s.Addr != addr {
		t.Fatalf("Addr changed across Restart: %s -> %s", addr, s.Addr)
	}
	// The client's connection died with the server; wait until rueidis redials and GET
	// gets a reply.
	err = redisserver.Poll(ctx, "a reply to GET after Restart", func() error {
		err := c.Do(ctx, c.B().Get().Key("k").Build()).Error()
		switch {
		case rueidis.IsRedisNil(err):
			return nil
		case err == nil:
			return redisserver.GiveUp(errors.New("GET k found the value written before Restart; want an empty server"))
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestMissingImageSaysHowToBuild(t *testing.T) {
	if err := DockerReady(); err != nil && strings.Contains(err.Error(), "no Docker engine") {
		t.Skipf("no Docker engine: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err := ProbeImage(ctx, "goredisson/redis:no-such-tag")
	if err == nil || !strings.Contains(err.Error(), "scripts/redis-image/build.sh") {
		t.Fatalf("ProbeImage(missing tag) = %v, want a message naming scripts/redis-image/build.sh", err)
	}
}
