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
