// Package renewal keeps watchdog locks alive: a hashed timer wheel, one per client and one
// goroutine, renews every registered lock once per interval (a third of the lease, 10 s by
// default) with batched script calls, and reports a lock as lost when renewal shows it is no
// longer held or when no renewal has succeeded for a whole lease.
//
// Entries are keyed by lock name. Each entry lists the owners (hash fields) of this client
// that hold the lock under the watchdog, each with its hold count: re-entering adds to the
// count, and the final release removes the owner before the release returns, so a released
// lock is never renewed again. Explicit leases are never registered.
//
// A renewal call carries up to BatchSize locks (HEXISTS field, then PEXPIRE), all in one hash
// slot when the client is a cluster client. Locks whose field is gone are dropped and
// reported lost. A call that fails is retried at the next tick; a lock that could not be
// renewed for a whole lease is reported lost too, because its key must have expired.
//
// What this guarantees, honestly: a holder learns of a loss at most one interval after the
// server's state shows it (field gone), or one lease after the last successful renewal when
// Redis cannot be reached. A holder can still lose the key before it learns so (failover to a
// replica that lacked the write, a process pause longer than the lease): the signal is
// late, not preventive. See docs/RELIABILITY.md.
package renewal
