// Package redisserver starts a throwaway Redis 7.0 server on 127.0.0.1 and injects faults
// into it: a container of the locally built image [Image] through testcontainers-go when a
// Docker engine answers, else a redis-server child process on a free loopback port. The
// project's tests use it through internal/redistest; the goredisson command uses it
// directly for its demo.
//
// # How the server runs
//
// [Start] picks the way from [Options.Mode], or from the environment variable [EnvMode]
// (GOREDISSON_REDIS) when that is empty:
//
//   - "container": a container of goredisson/redis:7.0.15 (see scripts/redis-image/build.sh),
//     published on 127.0.0.1 only, on a host port fixed up front so the address survives a
//     restart. Nothing is ever pulled: a missing image is an error that names the command
//     that builds it.
//   - "process": the program that [EnvServer] (GOREDISSON_REDIS_SERVER) names, any Redis or
//     Valkey build, else redis-server from PATH, as a child process, without persistence
//     (no RDB snapshots, no AOF), in a temporary directory of its own.
//   - "auto" or unset: "container" when a Docker engine answers and the image exists,
//     "process" otherwise.
//
// [Server.How] says which way ran and why. In both ways a restarted server is empty:
// nothing is persisted.
//
// # Environment
//
// Before testcontainers first runs, [SetTestcontainersEnv] defaults
// TESTCONTAINERS_RYUK_DISABLED=true (the reaper's image cannot be pulled here) and
// TESTCONTAINERS_HOST_OVERRIDE=127.0.0.1 (these machines have /.dockerenv, and without the
// override testcontainers would dial the default gateway); values already set are kept.
// When GOREDISSON_RUN ([EnvRun]) is set, as .ci/run does, containers carry the label
// io.goredisson.run ([RunLabel]) with its value, so that one run can remove its own
// leftovers without touching another run's containers.
//
// Child processes run in a process group of their own (a Ctrl-C in the terminal reaches
// only the parent, which stops them) and, on Linux, are killed by the kernel when the
// parent dies. Pausing a process is supported on Linux only.
package redisserver
