package pubsub

import "strconv"

// Wake is how many waiters one message wakes: none, a number of them, or all of them. The
// zero value wakes none.
type Wake struct {
	n   int
	all bool
}

// WakeNone wakes no waiter: the message means nothing to the waiters of this rule.
var WakeNone = Wake{}

// WakeAll wakes every waiter of the channel.
var WakeAll = Wake{all: true}

// WakeN wakes the n earliest waiters that have no wake-up pending, or every such waiter when
// fewer wait. n ≤ 0 wakes none.
func WakeN(n int) Wake { return Wake{n: max(n, 0)} }

// Rule states what a message means to the waiters of one kind of object: it maps a message,
// as published (Redisson publishes decimal integers), to the waiters it wakes. Each lock
// type states its rule at Subscribe. Rules are called for every message received, on the
// goroutine that reads the subscription's connection, while the channel's waiters are
// locked: they must be fast and must not block.
type Rule func(message string) Wake

// LockRule is the rule of Redisson's LockPubSub, which Java uses for RLock and the
// read-write lock alike: "0" (a lock released) wakes one waiter, "1" (a write lock released,
// after which every reader may enter) wakes all; any other message wakes none. goredisson's
// RLock waiters and the fair lock's per-waiter channels use it; its read-write lock waiters
// use ReadRule and WriteRule.
func LockRule(message string) Wake {
	switch message {
	case "0":
		return WakeN(1)
	case "1":
		return WakeAll
	}
	return WakeNone
}

// LatchRule is the rule of Redisson's CountDownLatchPubSub: "0" (the count reached zero)
// wakes every waiter; "1" (a count set, or the latch deleted) and any other message wake
// none.
func LatchRule(message string) Wake {
	if message == "0" {
		return WakeAll
	}
	return WakeNone
}

// SemaphoreRule is the rule of Redisson's SemaphorePubSub: a message is the number of
// available permits after a release, and wakes that many waiters; a message that is not a
// decimal integer wakes none.
func SemaphoreRule(message string) Wake {
	n, err := strconv.Atoi(message)
	if err != nil {
		return WakeNone
	}
	return WakeN(n)
}

// ReadRule is the rule of goredisson's readers of a read-write lock, waiting in a class of
// their own on the lock's channel (Subscriber.SubscribeClass): "0" (the last reader left:
// the lock is free) and "1" (the writer left: the lock is free, or held for reading by the
// writer's owner) each wake every reader, since all of them may then enter together; waking
// one, as LockRule does for "0", would leave the others asleep until the holder's lease
// bound although they could share the lock. Any other message wakes none.
func ReadRule(message string) Wake {
	if message == "0" || message == "1" {
		return WakeAll
	}
	return WakeNone
}

// WriteRule is the rule of goredisson's writers of a read-write lock, in their own class on
// the lock's channel: "0" and "1" each wake one writer, since only one can take the lock (a
// writer that loses the race, to a reader or another client, sleeps again until the next
// message). Java's waiters on the same channel keep LockPubSub's rule ("0" one, "1" all,
// readers and writers together).
func WriteRule(message string) Wake {
	if message == "0" || message == "1" {
		return WakeN(1)
	}
	return WakeNone
}
