// Package redisserver starts a throwaway Redis 7.0 server on 127.0.0.1 and injects faults
// into it: a redis-server child process on a free loopback port, or a container when the
// program installed a way to run them ([UseContainers]). The project's tests use it
// through internal/redistest; the goredisson command uses it directly for its demo.
//
// # How the server runs
//
// [Start] picks the way from [Options.Mode], or from the environment variable [EnvMode]
// (GOREDISSON_REDIS) when that is empty:
//
//   - "container": a container, through the installed [Containers]. This package holds
//     none, so that the library module does not depend on testcontainers-go; the
//     integration module's package rediscontainer is one (a locally built image,
//     published on 127.0.0.1 only, on a host port fixed up front so the address survives
//     a restart). Without one, container mode fails with [ErrNoContainers].
//   - "process": the program that [EnvServer] (GOREDISSON_REDIS_SERVER) names, any Redis or
//     Valkey build, else redis-server from PATH, as a child process, without persistence
//     (no RDB snapshots, no AOF), in a temporary directory of its own.
//   - "auto" or unset: "container" when containers are installed and ready, "process"
//     otherwise.
//
// [Server.How] says which way ran and why. In both ways a restarted server is empty:
// nothing is persisted.
//
// Child processes run in a process group of their own (a Ctrl-C in the terminal reaches
// only the parent, which stops them) and, on Linux, are killed by the kernel when the
// parent dies. Pausing a process is supported on Linux only.
package redisserver
