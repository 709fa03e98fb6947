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
// the field does not hold the lock the reply is nil (not held). When the field holds it more
// than once its count is decremented, the TTL set to the lease (unless it is "0"), the reply
// 0 stored in the latch and replied. At the last hold ARGV[1] is published on the channel,
// the key deleted, and the reply is 1, with no latch: a retry of a full release finds the
// field gone and replies nil, which its caller, who knows it was the last hold, reads as
// released. Only a partial release could count twice, so only it needs a latch.
//
// The publish comes before any write of a full release, so that a publish the server
// refuses (an ACL user without PUBLISH or the channel) fails the script with nothing
// changed: the lock stays held, rather than deleted with its waiters never told.
//
// A field that holds a read-write lock's hash (a reader's) is refused: ReadWriteHeld.
var Release = newScript(`
`+replayLatch("KEYS[3]", "ARGV[6]")+releaseOne("KEYS[3]", "ARGV[5]", refuseReadWrite)+`if ARGV[4] ~= '' then
	redis.call(ARGV[4], KEYS[2], ARGV[1])
end
if ARGV[7] then
	redis.call(ARGV[7], KEYS[2], ARGV[1])
end
redis.call('del', KEYS[1])
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
// reply is 0 and nothing is published. As in Release, the publish comes first, so that a
// refused publish changes nothing.
var ForceRelease = newScript(`
if redis.call('exists', KEYS[1]) == 1 then
	if ARGV[2] ~= '' then
		redis.call(ARGV[2], KEYS[2], ARGV[1])
	end
	if ARGV[3] then
		redis.call(ARGV[3], KEYS[2], ARGV[1])
	end
	redis.call('del', KEYS[1])
	return 1
end
return 0
`, false)

// publishAll is a script step that publishes message on the channel KEYS[2] with each
// publish command in ARGV[first…] (PUBLISH and/or SPUBLISH).
func publishAll(first, message string) string {
	return `for i = ` + first + `, #ARGV do
	redis.call(ARGV[i], KEYS[2], ` + message + `)
end
`
}

// replayLatch is the first step of the release scripts: on a retry (the argument retry is
// "1") an unlock latch (KEYS index latch) that exists has its stored reply returned. A first
// attempt does not look: its request id is new, so no latch can exist.
func replayLatch(latch, retry string) string {
	return `if ` + retry + ` == '1' then
	local replay = redis.call('get', ` + latch + `)
	if replay then
		return tonumber(replay)
	end
end
`
}

// releaseOne is the step of the release scripts that gives up one hold of the field
// ARGV[3]: nil when it holds none; with holds left the lease ARGV[2] is set again (unless
// "0"), 0 stored in the latch with TTL ttlArg, and the reply is 0. Otherwise the script
// goes on to its full release having written nothing (so that a refused publish there
// changes nothing, and writes no latch: see Release). The step held (refuseReadWrite, or
// "") runs once the field is known to hold, before any write.
func releaseOne(latch, ttlArg, held string) string {
	return `local count = tonumber(redis.call('hget', KEYS[1], ARGV[3]))
if count == nil then
	return nil
end
` + held + `if count > 1 then
	redis.call('hincrby', KEYS[1], ARGV[3], -1)
	if ARGV[2] ~= '0' then
		redis.call('pexpire', KEYS[1], ARGV[2])
	end
	redis.call('set', ` + latch + `, 0, 'px', ` + ttlArg + `)
	return 0
end
`
}
