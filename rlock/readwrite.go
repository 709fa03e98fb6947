package rlock

import (
	"strings"

	"github.com/goredisson/goredisson/internal/keys"
)

// writerSuffix ends the hash field of a write hold: "<client-uuid>:<owner>:write".
const writerSuffix = ":write"

// ReadWriteLock is the handle of a read-write lock, shared with Java Redisson's
// RReadWriteLock of the same name: a read lock that any number of owners, of any clients,
// hold at once, and a write lock that excludes every other owner's read and write. Both
// halves live in one Redis hash at the name, so a Java writer excludes Go readers and a Go
// writer Java readers, and releases wake the waiters of both languages.
//
// The rules are Redisson's:
//
//   - Readers share: a read acquisition succeeds while the lock is free or held for reading.
//   - The writer is alone: a write acquisition succeeds only while the lock is free, or held
//     for writing by the same owner (a re-entry). A reader cannot upgrade: an owner that
//     holds the read lock through this Client and asks for the write lock gets ErrUpgrade
//     at once (Redisson's waits, for ever if it is the only reader) — release the read first.
//   - The writer may also read: an owner that holds the write lock acquires the read lock at
//     once. When it then releases the write lock, its reads remain and the lock is held for
//     reading (a downgrade), which other readers may then share.
//   - Each half is reentrant per owner, with its own count; Unlock of a half releases one
//     acquisition of that half.
//   - No fairness: a waiting writer has no priority over readers that arrive after it. While
//     readers keep overlapping, a writer waits; once the last reader releases, every waiter
//     is woken at once by the release's message (not by its lease) and one writer, or every
//     reader, gets in. Redisson promises nothing more, and neither does goredisson.
//
// Each read acquisition keeps a timeout key of its own ("{name}:<field>:rwlock_timeout:<k>")
// with its lease; a reader's release keeps the lock alive only as long as some reader's
// timeout key lives. The watchdog renews a read hold's timeout keys with the lock, in the
// same batched renewal calls as every other lock of the Client (docs/PROTOCOL.md,
// Read-write lock).
type ReadWriteLock struct {
	read, write *Lock
}

// NewReadWriteLock returns the handle of the read-write lock called name, as Java's
// getReadWriteLock(name): the name is the Redis key of both halves, verbatim. Like NewLock
// it never fails: its calls check the name and the client.
func (c *Client) NewReadWriteLock(name string) *ReadWriteLock {
	channel := keys.ReadWriteChannel(name)
	return &ReadWriteLock{
		read:  &Lock{c: c, name: name, channel: channel, kind: readLock},
		write: &Lock{c: c, name: name, channel: channel, kind: writeLock},
	}
}

// Name returns the lock's name, which is its Redis key.
func (rw *ReadWriteLock) Name() string { return rw.read.name }

// ReadLock returns the read half, as Java's readLock(). Its methods are the Lock's, with
// these differences: an acquisition succeeds while no other owner holds the write lock;
// Unlock publishes "0" on "redisson_rwlock:{name}" only when it frees the lock (the last
// reader leaving); ForceUnlock deletes the lock only while it is held for reading and
// publishes "0"; IsLocked reports whether any owner reads. Each acquisition keeps its own
// lease: a partial Unlock leaves the others as they are, and with explicit leases Held's
// safe-until is the earliest of them (a re-entry never moves it later). HoldCount and
// IsHeld count the owner's reads only.
func (rw *ReadWriteLock) ReadLock() *Lock { return rw.read }

// WriteLock returns the write half, as Java's writeLock(). Its methods are the Lock's, with
// these differences: an acquisition succeeds only while nobody else holds either half, and
// a re-entry adds its lease to the lock's TTL (Redisson's arithmetic); the final Unlock
// publishes "1" on "redisson_rwlock:{name}", which wakes every waiter, and leaves the lock
// held for reading when the owner still reads; ForceUnlock deletes the lock only while it is
// held for writing and publishes "1"; IsLocked reports whether the mode is "write".
// HoldCount and IsHeld count the owner's writes only.
func (rw *ReadWriteLock) WriteLock() *Lock { return rw.write }

// upgrade reports whether writer field asks for the write lock while its owner holds the
// read lock through this Client, and not the write lock: a wait that could never end, since
// the owner's own read keeps the writer out.
func (l *Lock) upgrade(field string) bool {
	return l.c.holds.has(l.name, strings.TrimSuffix(field, writerSuffix)) && !l.c.holds.has(l.name, field)
}
