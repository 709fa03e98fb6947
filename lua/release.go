package lua

// Release gives up one hold of a lock, idempotently per request.
//
//	KEYS[1] lock name
//	KEYS[2] unlock channel "redisson_lock__channel:{name}"
//	KEYS[3] unlock latch "redisson_unlock_latch:{name}:<request-id>"
//	ARGV[1] message published on a full release: "0"
//	ARGV[2] lease in milliseconds, set again when holds remain; "0" keeps the TTL
//	ARGV[3] holder field "<client-uuid>:<owner-id>"
//	ARGV[4] publish command: "PUBLISH" or "SPUBLISH", or "" to publish nothing (spin lock)
//	ARGV[5] latch TTL in milliseconds
//	ARGV[6] optional: "1" when the request is sent again, anything else (or nothing) on its
//	        first attempt
//	ARGV[7] optional second publish command
//
// On a retry (ARGV[6] "1") a latch that exists is replied unchanged: the retry replays the
// first result. A first attempt does not look, since its request id is new. Otherwise, when
// the field does not hold the lock the reply is nil (not held). With holds remaining the
// field's count is decremented, the TTL is set to the lease (unless it is "0"), the reply 0
// is stored in the latch and replied. At the last hold the key is deleted, ARGV[1] is
// published on the channel and the reply is 1, with no latch: a retry of a full release
// finds the field gone and replies nil, which its caller, who knows it was the last hold,
// reads as released. Only a partial release could count twice, so only it needs a latch.
var Release = newScript(`
if ARGV[6] == '1' then
	local replay = redis.call('get', KEYS[3])
	if replay then
		return tonumber(replay)
	end
end
local count = redis.call('hget', KEYS[1], ARGV[3])
if not count then
	return nil
end
if tonumber(count) > 1 then
	redis.call('hincrby', KEYS[1], ARGV[3], -1)
	if ARGV[2] ~= '0' then
		redis.call('pexpire', KEYS[1], ARGV[2])
	end
	redis.call('set', KEYS[3], 0, 'px', ARGV[5])
	return 0
end
redis.call('del', KEYS[1])
if ARGV[4] ~= '' then
	redis.call(ARGV[4], KEYS[2], ARGV[1])
end
if ARGV[7] then
	redis.call(ARGV[7], KEYS[2], ARGV[1])
end
return 1
`, false)

// ForceRelease deletes a lock whoever holds it.
//
//	KEYS[1] lock name
//	KEYS[2] unlock channel
//	ARGV[1] message published: "0"
//	ARGV[2] publish command: "PUBLISH" or "SPUBLISH", or "" to publish nothing (spin lock)
//	ARGV[3] optional second publish command
//
// When the key existed it is deleted, ARGV[1] is published and the reply is 1; otherwise the
// reply is 0 and nothing is published.
var ForceRelease = newScript(`
if redis.call('del', KEYS[1]) == 1 then
	if ARGV[2] ~= '' then
		redis.call(ARGV[2], KEYS[2], ARGV[1])
	end
	if ARGV[3] then
		redis.call(ARGV[3], KEYS[2], ARGV[1])
	end
	return 1
end
return 0
`, false)
