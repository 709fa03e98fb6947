// Package rediscontainer runs throwaway Redis 7.0 servers in Docker containers of the
// locally built image [Image], through testcontainers-go, and injects faults into them
// (kill, restart, pause, resume). [Use] installs it into internal/redisserver, which then
// runs container mode (GOREDISSON_REDIS=container, or auto when a Docker engine answers
// and the image exists) with it.
//
// It lives in the integration module so that testcontainers-go and the Docker client are
// dependencies of the modules that run containers (integration, cmd/goredisson, bench)
// and never of the library module that users require.
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
package rediscontainer
