// Package rlockotel reports what the goredisson lock clients do to OpenTelemetry: the
// metrics goredisson.lock.* and a span per lock operation. It implements rlock.Observer:
//
//	obs, err := rlockotel.New(rlockotel.Config{TracerProvider: tp, MeterProvider: mp})
//	...
//	locks, err := rlock.New(ctx, rc, rlock.Options{Observer: obs})
//
// It is a module of its own, so that an application that imports rlock without it has no
// OpenTelemetry module in its build.
//
// # Metrics
//
// Instrumentation scope github.com/goredisson/goredisson/rlock:
//
//   - goredisson.lock.acquire.duration (histogram, s, attribute outcome: acquired, locked,
//     canceled, error): the time from an acquire call to its return, waits included. Each
//     member of a MultiLock or RedLock is an acquire of its own.
//   - goredisson.lock.hold.duration (histogram, s): from an owner's first acquisition of a
//     lock to its final release.
//   - goredisson.lock.lost (counter): holds lost, to a lease not renewed in time, a removal by
//     someone else, a force-unlock.
//   - goredisson.lock.renewals, goredisson.lock.renewal.failures (counters): leases the
//     watchdog extended, and its renewal calls that failed.
//   - goredisson.lock.held (up-down counter): holds now, (lock, owner) pairs acquired and not
//     released.
//
// # Traces
//
// Each acquire, release, force-unlock and group acquire or release is a span under the
// caller's ctx, named for the method called: rlock.Lock, rlock.LockFor, rlock.TryLock,
// rlock.Do, rlock.TryDo, rlock.Unlock, rlock.ForceUnlock, rlock.MultiLock.Lock,
// rlock.RedLock.TryLock… A group's member acquires are spans under the group's. Attributes:
// db.system.name (redis), server.address and server.port, goredisson.lock.name (the lock's
// Redis key: no other key content is recorded), goredisson.lock.type, goredisson.owner.id,
// goredisson.client.id, goredisson.lock.wait (s, when bounded), goredisson.lock.lease.kind
// (watchdog or explicit) and goredisson.lock.lease (s), goredisson.group.members; at the end
// goredisson.outcome (acquired, refused, canceled, error; released; deleted or absent for a
// force-unlock), goredisson.attempts, goredisson.wakeups, goredisson.waited (s, asleep
// waiting for a release), goredisson.fencing.token, goredisson.group.granted, and error.type
// on an error. Each wake-up is an event rlock.woken. A hold lost later is an event
// rlock.hold.lost, with its cause, on the span that was current when the hold was acquired,
// if that span is still recording.
package rlockotel
