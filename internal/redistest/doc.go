// Package redistest gives tests a real Redis 7.0 server on 127.0.0.1. The servers are
// those of internal/redisserver (which the goredisson command's demo uses too); this
// package ties them to tests: ownership and cleanup, a server shared by a test binary,
// fault helpers that fail the test, rueidis clients, a goroutine leak check, and Redis
// Cluster and Sentinel deployments of redis-server processes.
//
// A test binary that uses this package calls [Main] from its TestMain:
//
//	func TestMain(m *testing.M) { redistest.Main(m) }
//
// Tests then ask for a server:
//
//   - [Start] starts a fresh, empty server owned by one test and stopped in its
//     Cleanup. Use it for tests that inject faults ([Server.Kill], [Server.Restart],
//     [Server.Pause], [Server.Resume]) or need an empty keyspace.
//   - [Shared] returns one server per test binary, started on first use and stopped by
//     [Main]. Tests sharing it must use their own key names (for example a random
//     suffix) and must not inject faults into it.
//
// # Helpers
//
// Besides servers, the package holds what the test packages of the module (and of the
// command and benchmark modules) would otherwise each write again:
//
//   - reads that fail the test on error: [Do], [HGetAll], [PTTL], [Exists], [NumSub],
//     [ShardNumSub]; and, for callers off the test's goroutine, [NumSubOf],
//     [CommandStats], [CommandCalls], [ParseClientList];
//   - pub/sub: [Server.Listen], [Published] (what was published, without waiting for
//     silence), [KillSubscribed] and [KillSubscribers];
//   - per test: [Name] (a key name no other test uses), [Context] (bounded, ended with the
//     test), [Poll] (wait on observable state with a deadline);
//   - [Overlap], which detects two owners inside one critical section, and [SyncBuffer],
//     a buffer that goroutines write concurrently (logs, a child's output).
//
// Subpackage rlocktest ties rlock Clients to tests, for the packages outside rlock.
//
// # How the server runs
//
// The environment variable GOREDISSON_REDIS picks how servers run:
//
//   - "process": a redis-server child process on a free loopback port, without
//     persistence (no RDB snapshots, no AOF), in its own temporary directory.
//   - "container": a container of the locally built image goredisson/redis:7.0.15 (see
//     scripts/redis-image/build.sh), published on 127.0.0.1 only, on a host port fixed up
//     front so the address survives a restart. Only test binaries that install the
//     integration module's container backend can run it (the integration tests, the
//     command's and the benchmarks' tests, from their TestMain:
//     rediscontainer.Use() before [Main]); the library's own test binaries do not, so
//     that its module does not depend on testcontainers-go, and fail in this mode.
//   - "auto" or unset: "container" when the test binary installed the container backend
//     and a Docker engine with the image is there, "process" otherwise.
//
// The first server of each kind logs which path ran, to the test log and to stderr.
// In both modes a restarted server is empty: nothing is persisted.
package redistest
