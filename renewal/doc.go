// Package renewal is the watchdog of goredisson's locks: a hashed timer wheel, one per
// client and one goroutine, that extends every lease it is given once per interval (a third
// of the lease, 10 s by default) with batched script calls.
//
// It is a building block of package rlock and of the lock types built on it; applications
// use it only through them. The wheel renews and reports, nothing more: its caller (rlock's
// hold registry) adds a hold when the hold's lease starts being renewed, removes it when
// renewal must stop, and decides what a result means. Each result is reported with the
// time its call was sent (OnRenewed), or as the holder's field gone from the lock (OnGone),
// or as a failed call (OnError), retried at the next tick until the caller removes the hold.
//
// A renewal call carries up to BatchSize locks (HEXISTS field, then PEXPIRE), all in one hash
// slot when the client is a cluster client. One renewal per lock name extends the key's TTL
// for every holder of it, so an entry with several holds sends the first only.
package renewal
