package redisserver

import (
	"context"
	"strings"
	"testing"
	"time"
)

func TestRequestedMode(t *testing.T) {
	for _, tc := range []struct{ env, want string }{
		{"", ModeAuto}, {"auto", ModeAuto}, {"container", ModeContainer}, {"process", ModeProcess},
	} {
		t.Setenv(EnvMode, tc.env)
		if got, err := RequestedMode(); err != nil || got != tc.want {
			t.Errorf("%s=%q: got %q, %v; want %q", EnvMode, tc.env, got, err, tc.want)
		}
	}
	t.Setenv(EnvMode, "docker")
	if _, err := RequestedMode(); err == nil || !strings.Contains(err.Error(), EnvMode) {
		t.Errorf("%s=docker: err = %v, want an error naming %s", EnvMode, err, EnvMode)
	}
	if _, err := Start(context.Background(), Options{}); err == nil || !strings.Contains(err.Error(), EnvMode) {
		t.Errorf("Start with %s=docker: err = %v, want an error naming %s", EnvMode, err, EnvMode)
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
