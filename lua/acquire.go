package lua

// Acquire takes or re-enters a lock.
//
//	KEYS[1] lock name
//	ARGV[1] lease in milliseconds
//	ARGV[2] holder field "<client-uuid>:<owner-id>"
//
// If the lock does not exist, or the field already holds it, the field's count is
// incremented, the key's TTL set to the lease, and the reply is nil (acquired). Otherwise the
// reply is the key's PTTL in milliseconds (-1 when the key has no TTL): the holder's
// remaining lease.
var Acquire = newScript(`
if redis.call('exists', KEYS[1]) == 0 or redis.call('hexists', KEYS[1], ARGV[2]) == 1 then
	redis.call('hincrby', KEYS[1], ARGV[2], 1)
	redis.call('pexpire', KEYS[1], ARGV[1])
	return nil
end
return redis.call('pttl', KEYS[1])
`, false)

// FencedAcquire takes or re-enters a fenced lock, and issues a fencing token for it.
//
//	KEYS[1] lock name
//	KEYS[2] token counter "redisson_lock_token:{name}"
//	ARGV[1] lease in milliseconds
//	ARGV[2] holder field "<client-uuid>:<owner-id>"
//
// It acquires as Acquire does, and every acquisition, a re-entry included, increments the
// counter (a string without TTL). The reply is a pair: {-1, token} when acquired, {PTTL, -1}
// when another holder has the lock (the PTTL is -1 when the key has no TTL, so the token
// tells the two apart).
var FencedAcquire = newScript(`
if redis.call('exists', KEYS[1]) == 0 or redis.call('hexists', KEYS[1], ARGV[2]) == 1 then
	local token = redis.call('incr', KEYS[2])
	redis.call('hincrby', KEYS[1], ARGV[2], 1)
	redis.call('pexpire', KEYS[1], ARGV[1])
	return {-1, token}
end
return {redis.call('pttl', KEYS[1]), -1}
`, false)

// NonReentrantAcquire takes a lock that its holder cannot take again.
//
//	KEYS[1] lock name
//	ARGV[1] lease in milliseconds
//	ARGV[2] holder field "<client-uuid>:<owner-id>"
//	ARGV[3] the error text for a second acquisition: "NON_REENTRANT_REACQUIRE"
//
// Only when the lock does not exist is the field's count set to 1 and the key's TTL to the
// lease; the reply is then nil (acquired). When the field already holds the lock the reply
// is the error ARGV[3] and nothing changes. Otherwise the reply is the key's PTTL (-1 when
// the key has no TTL), as for Acquire.
var NonReentrantAcquire = newScript(`
if redis.call('exists', KEYS[1]) == 0 then
	redis.call('hincrby', KEYS[1], ARGV[2], 1)
	redis.call('pexpire', KEYS[1], ARGV[1])
	return nil
end
if redis.call('hexists', KEYS[1], ARGV[2]) == 1 then
	return redis.error_reply(ARGV[3])
end
return redis.call('pttl', KEYS[1])
`, false)
