package redisserver

import (
	"context"
	"errors"
	"sync"
)

// Containers runs Redis servers in containers. This package has none of its own, so that
// the library module does not depend on a container engine's client: a program that may
// run containers installs one with [UseContainers] (package
// github.com/goredisson/goredisson/integration/rediscontainer does, from the integration
// tests and the goredisson command).
type Containers interface {
	// Ready returns nil when a container can start now, else what is missing and how to
	// get it.
	Ready() error
	// Start starts a container and returns once Redis answers PING on its Addr.
	Start(ctx context.Context, opts ContainerOptions) (Container, error)
}

// Container is a Redis server running in a container, as [Containers.Start] returns it.
// Its operations are those of [Server].
type Container interface {
	// Addr is the 127.0.0.1:port the server is published on; it stays the same across
	// Kill and Restart.
	Addr() string
	// Describe names the container for a person, e.g. "container 0123456789ab of
	// goredisson/redis:7.0.15".
	Describe() string
	Kill(context.Context) error
	Restart(context.Context) error
	Pause(context.Context) error
	Resume(context.Context) error
	Stop(context.Context) error
}

// ContainerOptions adjust a container started by [Containers.Start].
type ContainerOptions struct {
	// Labels are added to the container's labels.
	Labels map[string]string
	// Logger receives the container engine client's lines about this container; nil
	// discards them.
	Logger Logger
}

// Logger receives log lines, one per call.
type Logger interface {
	Printf(format string, v ...any)
}

// ErrNoContainers is the reason container mode cannot run in a program that installed no
// [Containers].
var ErrNoContainers = errors.New("this program installs no container backend (integration/rediscontainer does)")

var installed struct {
	mu sync.Mutex
	c  Containers
}

// UseContainers makes c the way [Start] runs containers, in this process, from now on.
func UseContainers(c Containers) {
	installed.mu.Lock()
	defer installed.mu.Unlock()
	installed.c = c
}

// containers returns the installed [Containers] when they are ready, else why not.
func containers() (Containers, error) {
	installed.mu.Lock()
	c := installed.c
	installed.mu.Unlock()
	if c == nil {
		return nil, ErrNoContainers
	}
	if err := c.Ready(); err != nil {
		return nil, err
	}
	return c, nil
}

// startContainer starts a container with the installed [Containers].
func startContainer(ctx context.Context, opts ContainerOptions) (Container, error) {
	c, err := containers()
	if err != nil {
		return nil, err
	}
	return c.Start(ctx, opts)
}
