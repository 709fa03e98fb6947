package lua

// The scripts of the read-write lock, Redisson's RReadWriteLock. Both halves live in one hash
// at the lock name: the field "mode" is "read" or "write"; a reader's field is
// "<client-uuid>:<owner-id>" and a writer's the same with ":write" appended, each holding
// that owner's reentry count. Every read acquisition k (1, 2, … per reader field) also has
// a timeout key "{name}:<field>:rwlock_timeout:<k>", a string "1" whose TTL is that
// acquisition's lease: a reader's release keeps the lock alive only as long as some
// reader's timeout key lives, so every client must create and renew them. Readers and
// writers share the channel "redisson_rwlock:{name}": a read release publishes "0", a write
// release "1". The scripts that publish take the publish commands ("PUBLISH", "SPUBLISH"
// or both) as their last arguments and publish once per command.

// WrongHolder is the error reply of ReadAcquire and WriteAcquire for a lock name whose hash
// has holder fields but no "mode": a lock of another type (plain, fair, fenced, spin) holds
// it, and writing a mode into its hash would make both think they hold it. Its code is
// Redis's own for a key of the wrong type.
const WrongHolder = "WRONGTYPE the name is held by a lock of another type (a hash of holders without a read-write mode)"

// ReadAcquire takes or re-enters the read lock.
//
//	KEYS[1] lock name
//	KEYS[2] the reader's timeout-key prefix "{name}:<field>:rwlock_timeout"
//	ARGV[1] lease in milliseconds
//	ARGV[2] reader field "<client-uuid>:<owner-id>"
//	ARGV[3] the same owner's writer field "<client-uuid>:<owner-id>:write"
//
// When nobody holds the lock, mode becomes "read", the field's count 1, its timeout key 1
// gets the lease as TTL and so does the lock. When the mode is "read", or "write" and the
// writer is ARGV[3] (a writer may also read), the field's count k is incremented, timeout
// key k gets the lease, and the lock's TTL becomes the larger of its TTL and the lease. The
// reply is then nil (acquired). Otherwise it is the lock's PTTL: the writer's remaining
// lease (-1 when the key has no TTL). A hash without "mode" (another lock type's) is not
// touched: the reply is the error WrongHolder.
var ReadAcquire = newScript(`
local wrongHolder = '`+WrongHolder+`'
local mode = redis.call('hget', KEYS[1], 'mode')
if mode == false then
	if redis.call('exists', KEYS[1]) == 1 then
		return redis.error_reply(wrongHolder)
	end
	redis.call('hset', KEYS[1], 'mode', 'read', ARGV[2], 1)
	redis.call('set', KEYS[2] .. ':1', 1, 'px', ARGV[1])
	redis.call('pexpire', KEYS[1], ARGV[1])
	return nil
end
if mode == 'read' or (mode == 'write' and redis.call('hexists', KEYS[1], ARGV[3]) == 1) then
	local k = redis.call('hincrby', KEYS[1], ARGV[2], 1)
	redis.call('set', KEYS[2] .. ':' .. k, 1, 'px', ARGV[1])
	redis.call('pexpire', KEYS[1], math.max(redis.call('pttl', KEYS[1]), tonumber(ARGV[1])))
	return nil
end
return redis.call('pttl', KEYS[1])
`, false)

// ReadRelease gives up one read hold, idempotently per request.
//
//	KEYS[1] lock name
//	KEYS[2] channel "redisson_rwlock:{name}"
//	KEYS[3] the reader's timeout-key prefix "{name}:<field>:rwlock_timeout"
//	KEYS[4] the timeout keys' common prefix "{name}"
//	KEYS[5] unlock latch "redisson_unlock_latch:{name}:<request-id>"
//	ARGV[1] message published when the lock is freed: "0"
//	ARGV[2] reader field
//	ARGV[3] latch TTL in milliseconds
//	ARGV[4] "1" when the request is sent again, anything else on its first attempt
//	ARGV[5…] publish commands
//
// On a retry (ARGV[4] "1") a latch that exists has its stored reply returned (the retry
// replays the first result); a first attempt does not look, since its request id is new.
// When the lock does not exist ARGV[1] is published (waiters of an expired lock wake) and
// the reply is nil, as it is when the field holds no read. Otherwise the field's count goes
// down by one (the field is removed at zero) and its top timeout key is deleted. While other
// fields remain, the lock's TTL becomes the longest PTTL of any reader's timeout keys and
// the reply is 0 (still held) — also when none is left but the mode is "write" (the writer
// keeps its own TTL). Otherwise the lock is deleted, ARGV[1] published and the reply is 1.
// Replies 0 and 1 are stored in the latch.
//
// Unlike Release, a read release stores its latch also when the owner's last read hold
// goes: its reply then is 0 or 1 depending on the other readers and the writer, not on the
// owner's own count, so a retry that found the field gone could not give the first
// attempt's reply back; the latch keeps the retry's reply exactly the first one's. (The
// caller ends the hold on either reply when it was the owner's last read, see rlock's
// unlock.)
var ReadRelease = newScript(`
`+replayLatch("KEYS[5]", "ARGV[4]")+`local mode = redis.call('hget', KEYS[1], 'mode')
if mode == false then
`+publishAll("5", "ARGV[1]")+`	return nil
end
if redis.call('hexists', KEYS[1], ARGV[2]) == 0 then
	return nil
end
-- The outcome is found before anything is written, so that a refused publish changes nothing.
local count = tonumber(redis.call('hget', KEYS[1], ARGV[2])) - 1
local function giveUp()
	if count == 0 then
		redis.call('hdel', KEYS[1], ARGV[2])
	else
		redis.call('hincrby', KEYS[1], ARGV[2], -1)
	end
	redis.call('del', KEYS[3] .. ':' .. (count + 1))
end
local left = redis.call('hlen', KEYS[1])
if count == 0 then
	left = left - 1
end
if left > 1 then
	local longest = -3
	for _, f in ipairs(redis.call('hkeys', KEYS[1])) do
		local n = tonumber(redis.call('hget', KEYS[1], f))
		if f == ARGV[2] then
			n = count
		end
		if n then
			for k = n, 1, -1 do
				longest = math.max(longest, redis.call('pttl', KEYS[4] .. ':' .. f .. ':rwlock_timeout:' .. k))
			end
		end
	end
	if longest > 0 then
		giveUp()
		redis.call('pexpire', KEYS[1], longest)
		redis.call('set', KEYS[5], 0, 'px', ARGV[3])
		return 0
	end
	if mode == 'write' then
		giveUp()
		redis.call('set', KEYS[5], 0, 'px', ARGV[3])
		return 0
	end
end
`+publishAll("5", "ARGV[1]")+`giveUp()
redis.call('del', KEYS[1])
redis.call('set', KEYS[5], 1, 'px', ARGV[3])
return 1
`, false)

// WriteAcquire takes or re-enters the write lock.
//
//	KEYS[1] lock name
//	ARGV[1] lease in milliseconds
//	ARGV[2] writer field "<client-uuid>:<owner-id>:write"
//
// When nobody holds the lock, mode becomes "write", the field's count 1 and the lock's TTL
// the lease. When the field already holds it, its count is incremented and the lease is
// added to the lock's TTL. The reply is then nil (acquired); otherwise it is the lock's
// PTTL (-1 when the key has no TTL). A reader, even the same owner's, waits. A hash without
// "mode" (another lock type's) is not touched: the reply is the error WrongHolder.
var WriteAcquire = newScript(`
local wrongHolder = '`+WrongHolder+`'
local mode = redis.call('hget', KEYS[1], 'mode')
if mode == false then
	if redis.call('exists', KEYS[1]) == 1 then
		return redis.error_reply(wrongHolder)
	end
	redis.call('hset', KEYS[1], 'mode', 'write', ARGV[2], 1)
	redis.call('pexpire', KEYS[1], ARGV[1])
	return nil
end
if mode == 'write' and redis.call('hexists', KEYS[1], ARGV[2]) == 1 then
	redis.call('hincrby', KEYS[1], ARGV[2], 1)
	redis.call('pexpire', KEYS[1], redis.call('pttl', KEYS[1]) + tonumber(ARGV[1]))
	return nil
end
return redis.call('pttl', KEYS[1])
`, false)

// WriteRelease gives up one write hold, idempotently per request.
//
//	KEYS[1] lock name
//	KEYS[2] channel "redisson_rwlock:{name}"
//	KEYS[3] unlock latch "redisson_unlock_latch:{name}:<request-id>"
//	ARGV[1] message published when the write hold ends: "1"
//	ARGV[2] lease in milliseconds, set again when holds remain; "0" keeps the TTL
//	ARGV[3] writer field
//	ARGV[4] latch TTL in milliseconds
//	ARGV[5] "1" when the request is sent again, anything else on its first attempt
//	ARGV[6…] publish commands
//
// On a retry (ARGV[5] "1") a latch that exists has its stored reply returned; a first
// attempt does not look. When the lock does not exist ARGV[1] is published and the reply is
// nil; when the mode is not "write" or the field does not hold it, the reply is nil. With
// holds left the field's count goes down by one, the TTL is set to the lease (unless "0"),
// and the reply 0 is stored in the latch and replied. At the last hold ARGV[1] is published,
// then the field is removed: if only the mode is left the lock is deleted, otherwise (the
// owner still reads) the mode becomes "read"; the reply is 1, with no latch, as in Release:
// a retry finds the write hold gone (the mode no longer "write", or the field missing) and
// replies nil, which its caller, who knows it released its last write hold, reads as
// released. The publish comes before any write of a full release, so that a refused publish
// changes nothing.
var WriteRelease = newScript(`
`+replayLatch("KEYS[3]", "ARGV[5]")+`local mode = redis.call('hget', KEYS[1], 'mode')
if mode == false then
`+publishAll("6", "ARGV[1]")+`	return nil
end
if mode ~= 'write' then
	return nil
end
`+releaseOne("KEYS[3]", "ARGV[4]", "")+publishAll("6", "ARGV[1]")+`redis.call('hdel', KEYS[1], ARGV[3])
if redis.call('hlen', KEYS[1]) == 1 then
	redis.call('del', KEYS[1])
else
	redis.call('hset', KEYS[1], 'mode', 'read')
end
return 1
`, false)

// ReadWriteForceRelease deletes a read-write lock held in one mode, whoever holds it.
//
//	KEYS[1] lock name
//	KEYS[2] channel "redisson_rwlock:{name}"
//	ARGV[1] the mode to end: "read" or "write"
//	ARGV[2] message published: "0" for read, "1" for write
//	ARGV[3…] publish commands
//
// When the lock's mode is ARGV[1] it is deleted, ARGV[2] published and the reply is 1;
// otherwise nothing changes and the reply is 0. Readers' timeout keys are left to expire.
var ReadWriteForceRelease = newScript(`
if redis.call('hget', KEYS[1], 'mode') == ARGV[1] then
`+publishAll("3", "ARGV[2]")+`	redis.call('del', KEYS[1])
	return 1
end
return 0
`, false)

// ReadLocked reports whether a read-write lock is held for reading.
//
//	KEYS[1] lock name
//
// The reply is 1 when the mode is "read", or "write" with more fields than the mode and the
// writer (the writer also reads); otherwise 0.
var ReadLocked = newScript(`
local mode = redis.call('hget', KEYS[1], 'mode')
if mode == 'read' or (mode == 'write' and redis.call('hlen', KEYS[1]) > 2) then
	return 1
end
return 0
`, true)

// RenewRead extends the leases of a batch of read holds, each only while its reader still
// holds the lock.
//
//	KEYS[2i-1] lock name of hold i (in a cluster, all in one hash slot)
//	KEYS[2i]   its timeout keys' common prefix "{name}"
//	ARGV[1]    lease in milliseconds
//	ARGV[i+1]  reader field of hold i
//
// For each hold whose field exists with count c, the timeout keys 1..c of that field and the
// lock get the lease as TTL. The reply has one integer per hold: 1 renewed, 0 the field is
// gone. Other readers' timeout keys are not touched (each client renews its own, as Redisson
// 4.4+ does), and no key is created, so retrying is safe.
var RenewRead = newScript(renewRead(false), true)

// RenewReadAll is RenewRead that, for each hold it renews, also gives the lease to the
// timeout keys of every other reader of the lock, Java's included, as Redisson 3.x before
// 3.44 did: a reader whose own client fails to renew its keys stays a reader while this
// one holds the lock. Same KEYS, ARGV and reply as RenewRead.
var RenewReadAll = newScript(renewRead(true), true)

// renewRead returns the source of RenewRead, or of RenewReadAll when all.
func renewRead(all bool) string {
	readers := "{field}"
	if all {
		readers = "redis.call('hkeys', name)"
	}
	return `
local renewed = {}
for i = 1, #KEYS / 2 do
	local name, field = KEYS[2 * i - 1], ARGV[i + 1]
	if redis.call('hexists', name, field) == 1 then
		for _, f in ipairs(` + readers + `) do
			local count = tonumber(redis.call('hget', name, f))
			if count then
				for k = count, 1, -1 do
					redis.call('pexpire', KEYS[2 * i] .. ':' .. f .. ':rwlock_timeout:' .. k, ARGV[1])
				end
			end
		end
		redis.call('pexpire', name, ARGV[1])
		renewed[i] = 1
	else
		renewed[i] = 0
	end
end
return renewed
`
}
