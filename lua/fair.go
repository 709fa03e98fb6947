package lua

// The fair lock's scripts keep, next to the lock's hash, a queue of waiters (a list of
// holder fields, oldest first) and a timeout set (a sorted set: each queued field scored
// with the epoch milliseconds by which it must have taken the lock). A waiter's channel is
// the lock's channel, a colon and its field; a release publishes on the channel of the
// waiter at the head of the queue only. "now" is always the caller's wall clock in epoch
// milliseconds.

// purgeStale is the step that starts most fair scripts: while the queue's head has a
// deadline at or before now (ARGV index given), it leaves the queue and the timeout set.
// Other waiters' deadlines are not changed.
func purgeStale(nowArg string) string {
	return `
while true do
	local head = redis.call('lindex', KEYS[2], 0)
	if not head then
		break
	end
	local deadline = redis.call('zscore', KEYS[3], head)
	if deadline and tonumber(deadline) <= tonumber(` + nowArg + `) then
		redis.call('zrem', KEYS[3], head)
		redis.call('lpop', KEYS[2])
	else
		break
	end
end
`
}

// takeIfFirst is the step that grants a free lock to the field ARGV[2] when the queue is
// empty or the field heads it: the field leaves the queue, every other waiter's deadline
// moves waitArg earlier, and the field holds the lock once with the lease ARGV[1]. A field
// that already holds the lock re-enters. Both reply nil. A read-write lock's hash (which the
// take leaves alone, since the key exists) is refused before the re-entry: ReadWriteHeld.
func takeIfFirst(waitArg string) string {
	return `
if redis.call('exists', KEYS[1]) == 0 and
	(redis.call('exists', KEYS[2]) == 0 or redis.call('lindex', KEYS[2], 0) == ARGV[2]) then
	redis.call('lpop', KEYS[2])
	redis.call('zrem', KEYS[3], ARGV[2])
	local queued = redis.call('zrange', KEYS[3], 0, -1)
	for i = 1, #queued do
		redis.call('zincrby', KEYS[3], -tonumber(` + waitArg + `), queued[i])
	end
	redis.call('hset', KEYS[1], ARGV[2], 1)
	redis.call('pexpire', KEYS[1], ARGV[1])
	return nil
end
` + refuseReadWrite + `if redis.call('hexists', KEYS[1], ARGV[2]) == 1 then
	redis.call('hincrby', KEYS[1], ARGV[2], 1)
	redis.call('pexpire', KEYS[1], ARGV[1])
	return nil
end
`
}

// wakeHead publishes ARGV[msg] on the channel of the waiter at the head of the queue, with
// the publish command ARGV[pub] and, when given, ARGV[pub2] too; nothing when the queue is
// empty or the command is "".
func wakeHead(msg, pub, pub2 string) string {
	return `
local nxt = redis.call('lindex', KEYS[2], 0)
if nxt then
	if ARGV[` + pub + `] ~= '' then
		redis.call(ARGV[` + pub + `], KEYS[4] .. ':' .. nxt, ARGV[` + msg + `])
	end
	if ARGV[` + pub2 + `] then
		redis.call(ARGV[` + pub2 + `], KEYS[4] .. ':' .. nxt, ARGV[` + msg + `])
	end
end
`
}

// FairAcquire takes, re-enters, or queues for a fair lock (Redisson's waiting form, used by
// lock and tryLock with a wait).
//
//	KEYS[1] lock name
//	KEYS[2] queue "redisson_lock_queue:{name}"
//	KEYS[3] timeout set "redisson_lock_timeout:{name}"
//	ARGV[1] lease in milliseconds
//	ARGV[2] holder field "<client-uuid>:<owner-id>"
//	ARGV[3] thread-wait time in milliseconds
//	ARGV[4] now, epoch milliseconds
//
// Stale heads are purged. When the lock is free and the queue empty or headed by the field,
// the field takes it (leaving the queue, every other waiter's deadline moved ARGV[3]
// earlier); a holder re-enters; both reply nil. A field already queued gets the holder's
// PTTL, at least 0. Otherwise the field joins the queue's tail with the deadline: the last
// waiter's deadline (or now plus the holder's PTTL when there is none) plus ARGV[3]; the
// reply is that deadline less ARGV[3] and now. A read-write lock's hash is refused
// (ReadWriteHeld) instead of being re-entered or queued for.
var FairAcquire = newScript(purgeStale("ARGV[4]")+takeIfFirst("ARGV[3]")+`
if redis.call('zscore', KEYS[3], ARGV[2]) then
	return math.max(0, redis.call('pttl', KEYS[1]))
end
local last = redis.call('lindex', KEYS[2], -1)
local ttl
if last and last ~= ARGV[2] and redis.call('zscore', KEYS[3], last) then
	ttl = tonumber(redis.call('zscore', KEYS[3], last)) - tonumber(ARGV[4])
else
	ttl = redis.call('pttl', KEYS[1])
end
if redis.call('zadd', KEYS[3], ttl + tonumber(ARGV[3]) + tonumber(ARGV[4]), ARGV[2]) == 1 then
	redis.call('rpush', KEYS[2], ARGV[2])
end
return ttl
`, false)

// FairTryAcquire takes or re-enters a fair lock without queueing (Redisson's no-wait form,
// used by tryLock without a wait). Note the order of ARGV[3] and ARGV[4], swapped against
// FairAcquire's, as in Redisson.
//
//	KEYS[1] lock name
//	KEYS[2] queue
//	KEYS[3] timeout set
//	ARGV[1] lease in milliseconds
//	ARGV[2] holder field
//	ARGV[3] now, epoch milliseconds
//	ARGV[4] thread-wait time in milliseconds
//
// Stale heads are purged, then the lock is taken or re-entered as by FairAcquire (reply
// nil); otherwise the reply is 1 and the queue is left as it is. A read-write lock's hash is
// refused (ReadWriteHeld).
var FairTryAcquire = newScript(purgeStale("ARGV[3]")+takeIfFirst("ARGV[4]")+`
return 1
`, false)

// FairLeave takes a waiter that gave up out of a fair lock's queue (Redisson's
// acquireFailed), and wakes the next waiter when the one leaving was first and the lock is
// free.
//
//	KEYS[1] queue
//	KEYS[2] timeout set
//	KEYS[3] lock name
//	KEYS[4] channel base "redisson_lock__channel:{name}"
//	ARGV[1] holder field of the waiter leaving
//	ARGV[2] thread-wait time in milliseconds
//	ARGV[3] publish command: "PUBLISH" or "SPUBLISH"
//	ARGV[4] message: "0"
//	ARGV[5] optional second publish command
//
// Every waiter behind the field gets its deadline moved ARGV[2] earlier, and the field
// leaves the queue and the timeout set; a field not queued changes nothing. Redisson's
// script ends there (its KEYS are the first two). Ours then, when the field was first in the
// queue and the lock's key does not exist, publishes ARGV[4] on the new first waiter's
// channel: a release may have been published to the waiter leaving, and without it the next
// one would sleep until its own timer. Like every script here that publishes, it publishes
// before it writes, so that a publish refused by Redis's ACL changes nothing. The reply is
// nil.
var FairLeave = newScript(`
local queue = redis.call('lrange', KEYS[1], 0, -1)
local i = 1
while i <= #queue and queue[i] ~= ARGV[1] do
	i = i + 1
end
local nxt = queue[2]
if i == 1 and nxt and redis.call('exists', KEYS[3]) == 0 then
	redis.call(ARGV[3], KEYS[4] .. ':' .. nxt, ARGV[4])
	if ARGV[5] then
		redis.call(ARGV[5], KEYS[4] .. ':' .. nxt, ARGV[4])
	end
end
for j = i + 1, #queue do
	redis.call('zincrby', KEYS[2], -tonumber(ARGV[2]), queue[j])
end
redis.call('zrem', KEYS[2], ARGV[1])
redis.call('lrem', KEYS[1], 0, ARGV[1])
return nil
`, false)

// FairRelease gives up one hold of a fair lock, idempotently per request, and wakes the
// first waiter of the queue on a full release.
//
//	KEYS[1] lock name
//	KEYS[2] queue
//	KEYS[3] timeout set
//	KEYS[4] channel base "redisson_lock__channel:{name}"
//	KEYS[5] unlock latch "redisson_unlock_latch:{name}:<request-id>"
//	ARGV[1] message published: "0"
//	ARGV[2] lease in milliseconds, set again when holds remain; "0" keeps the TTL
//	ARGV[3] holder field
//	ARGV[4] now, epoch milliseconds
//	ARGV[5] publish command: "PUBLISH" or "SPUBLISH"
//	ARGV[6] latch TTL in milliseconds
//	ARGV[7] "1" when the request is sent again, anything else on its first attempt
//	ARGV[8] optional second publish command
//
// On a retry (ARGV[7] "1") a stored latch is replayed; a first attempt does not look. Stale
// heads are purged. When the lock's key does not exist the first waiter is woken and the
// reply is nil (Redisson replies 1 there, so that Java's unlock of an expired fair lock
// succeeds; ours is "not held", as for every other lock). When the field does not hold the
// lock the reply is nil. With holds left the field's count is decremented, the TTL is set to
// the lease (unless "0"), and the reply 0 is stored in the latch and replied. At the last
// hold the first waiter is woken, the key deleted and the reply is 1, with no latch, as in
// Release: a retry finds the field gone (the key deleted, or taken by the next waiter since)
// and replies nil, which its caller, who knows it released its last hold, reads as released.
// The publish comes before the lock's key is touched, so that a refused publish leaves the
// lock held (the purge of stale heads before it is a cleanup any script would do). A field
// that holds a read-write lock's hash (a reader's) is refused: ReadWriteHeld.
var FairRelease = newScript(`
`+replayLatch("KEYS[5]", "ARGV[7]")+purgeStale("ARGV[4]")+`
if redis.call('exists', KEYS[1]) == 0 then
`+wakeHead("1", "5", "8")+`
	return nil
end
`+releaseOne("KEYS[5]", "ARGV[6]", refuseReadWrite)+wakeHead("1", "5", "8")+`
redis.call('del', KEYS[1])
return 1
`, false)

// FairForceRelease deletes a fair lock whoever holds it and wakes the first waiter.
//
//	KEYS[1] lock name
//	KEYS[2] queue
//	KEYS[3] timeout set
//	KEYS[4] channel base
//	ARGV[1] message published: "0"
//	ARGV[2] now, epoch milliseconds
//	ARGV[3] publish command: "PUBLISH" or "SPUBLISH"
//	ARGV[4] optional second publish command
//
// Stale heads are purged. When the key existed it is deleted, the first waiter (if any) is
// woken and the reply is 1; otherwise the reply is 0 and nothing is published. The queue
// and the timeout set are kept.
var FairForceRelease = newScript(purgeStale("ARGV[2]")+`
if redis.call('exists', KEYS[1]) == 1 then
`+wakeHead("1", "3", "4")+`
	redis.call('del', KEYS[1])
	return 1
end
return 0
`, false)

// FairHeadDeadline reads when the first waiter of a fair lock's queue must have taken it.
//
//	KEYS[1] queue
//	KEYS[2] timeout set
//
// The reply is the first waiter's deadline in epoch milliseconds, or -1 when the queue is
// empty or its first waiter has no deadline. It writes nothing.
var FairHeadDeadline = newScript(`
local head = redis.call('lindex', KEYS[1], 0)
if not head then
	return -1
end
local deadline = redis.call('zscore', KEYS[2], head)
if not deadline then
	return -1
end
return tonumber(deadline)
`, true)
