// Package bench measures goredisson on one local redis-server: PING round trip, lock
// handoff latency, the Redis commands a waiter sends per acquisition, watchdog renewal at
// 100,000 held locks (against a naive one-timer-per-lock renewer), and go test benchmarks of
// the uncontended path. Everything lives in the package's tests; see README.md for the
// commands. The report test runs only with GOREDISSON_BENCH=1, so CI stays fast.
package bench
