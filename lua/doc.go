// Package lua holds the Redis scripts of goredisson's locks. It is a building block of
// package rlock and the lock types built on it; applications use it only through them, or
// to inspect what goredisson writes. Each script keeps the
// data layout, replies and publishes of Redisson's RLock (docs/PROTOCOL.md), so Java Redisson
// clients and goredisson share one lock per name:
//
//   - the lock is a hash at the lock name; each field is "<client-uuid>:<owner-id>" and its
//     value is that owner's reentry count;
//   - the key's PEXPIRE is the lease (the watchdog timeout when no lease was given);
//   - a full release publishes "0" on "redisson_lock__channel:{name}".
//
// Channels are always passed in KEYS so that cluster slot checks and SPUBLISH work. Publish
// commands are passed in ARGV ("PUBLISH" or "SPUBLISH"); a script that publishes takes one
// or two of them, so a release can reach classic and sharded subscribers alike.
//
// Every script is an immutable Script value, run with its Exec methods (EVALSHA, with EVAL
// on NOSCRIPT). Only Renew is retryable: acquire and release change counters and are not
// idempotent by themselves.
package lua
