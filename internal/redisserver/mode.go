package redisserver

import (
	"fmt"
	"os"
)

// Ways a [Server] can run, as [Options.Mode], [EnvMode] and [Server.Mode] name them.
const (
	// ModeContainer runs Redis in a container, through the [Containers] installed with
	// [UseContainers].
	ModeContainer = "container"
	// ModeProcess runs redis-server as a child process.
	ModeProcess = "process"
	// ModeAuto picks ModeContainer when containers are installed and ready, else
	// ModeProcess.
	ModeAuto = "auto"
)

// EnvMode is the environment variable that selects the mode when [Options.Mode] is empty:
// "container", "process" or "auto" (the default when it is unset or empty).
const EnvMode = "GOREDISSON_REDIS"

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
