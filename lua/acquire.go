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
// remaining lease. A read-write lock's hash is refused (see ReadWriteHeld).
var Acquire = newScript(`
if redis.call('exists', KEYS[1]) == 1 then
`+refuseReadWrite+`	if redis.call('hexists', KEYS[1], ARGV[2]) == 0 then
		return redis.call('pttl', KEYS[1])
	end
end
redis.call('hincrby', KEYS[1], ARGV[2], 1)
redis.call('pexpire', KEYS[1], ARGV[1])
return nil
`, false)

// ReadWriteHeld is the error reply of the scripts of the plain, fenced, spin, non-reentrant
// and fair locks for a name whose hash has a "mode" field: a read-write lock holds it. Its
// readers' fields look like a lock holder's, so a lock would otherwise re-enter an owner's
// read and count it, or delete every reader's hold on release. The scripts refuse before any
// write. Its code is Redis's own for a key of the wrong type.
const ReadWriteHeld = "WRONGTYPE the name is held by a read-write lock (a hash with a mode field)"

// refuseReadWrite is the script step that replies ReadWriteHeld when KEYS[1] has a mode.
const refuseReadWrite = `if redis.call('hexists', KEYS[1], 'mode') == 1 then
	return redis.error_reply('` + ReadWriteHeld + `')
end
`

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
// tells the two apart). A read-write lock's hash is refused (see ReadWriteHeld).
var FencedAcquire = newScript(`
if redis.call('exists', KEYS[1]) == 1 then
`+refuseReadWrite+`	if redis.call('hexists', KEYS[1], ARGV[2]) == 0 then
		return {redis.call('pttl', KEYS[1]), -1}
	end
end
local token = redis.call('incr', KEYS[2])
redis.call('hincrby', KEYS[1], ARGV[2], 1)
redis.call('pexpire', KEYS[1], ARGV[1])
return {-1, token}
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
// the key has no TTL), as for Acquire. A read-write lock's hash is refused (see
// ReadWriteHeld).
var NonReentrantAcquire = newScript(`
if redis.call('exists', KEYS[1]) == 0 then
	redis.call('hincrby', KEYS[1], ARGV[2], 1)
	redis.call('pexpire', KEYS[1], ARGV[1])
	return nil
end
`+refuseReadWrite+`if redis.call('hexists', KEYS[1], ARGV[2]) == 1 then
	return redis.error_reply(ARGV[3])
end
return redis.call('pttl', KEYS[1])
`, false)
