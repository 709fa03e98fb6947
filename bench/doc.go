// Package bench measures goredisson on one local redis-server: PING round trip, lock
// handoff latency, the Redis commands a waiter sends per acquisition, watchdog renewal at
// 100,000 held locks (against a naive one-timer-per-lock renewer), and go test benchmarks of
// the uncontended path (TestReport), and goredisson side by side with redsync,
// bsm/redislock, rueidislock and Java Redisson, which writes docs/BENCHMARKS.md and
// docs/benchmarks.png (TestCompare). Everything lives in the package's tests; see README.md
// for the commands. Both tests run only with GOREDISSON_BENCH=1, so CI stays fast.
package bench
