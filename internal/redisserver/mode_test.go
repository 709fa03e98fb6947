package redisserver

import (
	"context"
	"errors"
	"strings"
	"testing"
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

// This package's test binary installs no Containers, like every test binary of the
// library module.
func TestContainerModeWithoutContainers(t *testing.T) {
	_, err := Start(context.Background(), Options{Mode: ModeContainer})
	var ue *UnavailableError
	if !errors.As(err, &ue) || !errors.Is(ue.Container, ErrNoContainers) || ue.Process != nil {
		t.Fatalf("Start(container) without Containers = %v, want an UnavailableError with ErrNoContainers only", err)
	}
}
