package rediscontainer

import (
	"context"

	"github.com/goredisson/goredisson/internal/redisserver"
)

// Use installs these containers as the way internal/redisserver (and so
// internal/redistest) runs Redis in container mode, for the rest of the process. Call it
// before the first server starts: from TestMain before redistest.Main, or from main.
func Use() {
	SetTestcontainersEnv()
	redisserver.UseContainers(containers{})
}

// containers is the [redisserver.Containers] that [Use] installs.
type containers struct{}

func (containers) Ready() error { return DockerReady() }

func (containers) Start(ctx context.Context, opts redisserver.ContainerOptions) (redisserver.Container, error) {
	return Start(ctx, opts)
}
