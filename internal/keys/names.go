package keys

import "strings"

const (
	lockChannelPrefix = "redisson_lock__channel"
	unlockLatchPrefix = "redisson_unlock_latch"
	fencingPrefix     = "redisson_lock_token"
)

// Tagged returns name in hash-tagged form, as Redisson does: "{name}" when name has no
// '{', otherwise name unchanged (the caller's own hash tag is relied on).
func Tagged(name string) string {
	if strings.Contains(name, "{") {
		return name
	}
	return "{" + name + "}"
}

// Prefixed returns prefix + ":" + Tagged(name): Redisson's prefixName. It allocates once.
func Prefixed(prefix, name string) string {
	if strings.Contains(name, "{") {
		return prefix + ":" + name
	}
	return prefix + ":{" + name + "}"
}

// LockChannel is the pub/sub channel on which the unlock of lock name is announced:
// "redisson_lock__channel:{name}" (note the double underscore).
func LockChannel(name string) string {
	return Prefixed(lockChannelPrefix, name)
}

// UnlockLatch is the key under which one unlock request stores its result so that a
// retry of the same request replays it: "redisson_unlock_latch:{name}:<requestID>".
func UnlockLatch(name, requestID string) string {
	if strings.Contains(name, "{") {
		return unlockLatchPrefix + ":" + name + ":" + requestID
	}
	return unlockLatchPrefix + ":{" + name + "}:" + requestID
}

// FencingToken is the counter of a fenced lock's tokens: "redisson_lock_token:{name}", a
// string key without TTL that every acquisition increments.
func FencingToken(name string) string {
	return Prefixed(fencingPrefix, name)
}

// LatchChannel is the pub/sub channel of countdown latch name:
// "redisson_countdownlatch__channel__{name}", always with braces and without a colon, even
// when name has a '{' of its own.
func LatchChannel(name string) string {
	return "redisson_countdownlatch__channel__{" + name + "}"
}

// SemaphoreChannel is the pub/sub channel of semaphore name: "redisson_sc:{name}".
func SemaphoreChannel(name string) string {
	return Prefixed("redisson_sc", name)
}

// PermitTimeouts is the sorted set of the permits held from permit-expirable semaphore name,
// Redisson's suffixName(name, "timeout"): "{name}:timeout", or "name:timeout" when name has
// a '{' of its own. Either way it hashes to the semaphore's slot.
func PermitTimeouts(name string) string {
	return Tagged(name) + ":timeout"
}

// FairQueue is the queue of a fair lock's waiters: "redisson_lock_queue:{name}", a list of
// holder fields, oldest first, without TTL.
func FairQueue(name string) string {
	return Prefixed("redisson_lock_queue", name)
}

// FairTimeout is the timeout set of a fair lock: "redisson_lock_timeout:{name}", a sorted
// set of the queued holder fields scored with their deadlines (epoch ms), without TTL.
func FairTimeout(name string) string {
	return Prefixed("redisson_lock_timeout", name)
}

// FairWaiterChannel is the channel on which the fair lock name wakes the waiter with
// holder field field: LockChannel(name) + ":" + field.
func FairWaiterChannel(name, field string) string {
	return LockChannel(name) + ":" + field
}

// ReadWriteChannel is the pub/sub channel of read-write lock name, shared by its readers and
// its writer: "redisson_rwlock:{name}".
func ReadWriteChannel(name string) string {
	return Prefixed("redisson_rwlock", name)
}

// ReadTimeoutPrefix is the common prefix of the per-acquisition timeout keys of reader field
// of read-write lock name: "{name}:<field>:rwlock_timeout" (Redisson's suffixName(name,
// field) + ":rwlock_timeout"). Acquisition k of the field has the key prefix + ":" + k.
func ReadTimeoutPrefix(name, field string) string {
	return Tagged(name) + ":" + field + ":rwlock_timeout"
}
