package lua

// The scripts of the permit-expirable semaphore, Redisson's RPermitExpirableSemaphore. The
// semaphore is a string key holding the available permits and a sorted set of the permits
// held: each member is a permit id (16 raw bytes), its score the time in Unix milliseconds
// at which the permit expires, or NeverExpires. Its channel is "redisson_sc:{name}", the
// semaphore's.
//
// Every script takes the same keys and first two arguments:
//
//	KEYS[1] semaphore name (available permits)
//	KEYS[2] permit timeouts, "{name}:timeout"
//	KEYS[3] semaphore channel
//	ARGV[1] now, Unix milliseconds of the caller's clock
//	ARGV[2] publish commands, separated by spaces ("PUBLISH", "SPUBLISH" or both)
//
// Most scripts first reclaim the expired permits: held permits whose score is at most now are
// removed, their number is added to the available permits and, when the new count is
// positive, it is published, which wakes that many waiters. Every script publishes before
// it writes (the values published are computed first), so that a publish refused by Redis's
// ACL leaves the semaphore as it was.

// NeverExpires is the score of a permit acquired without a lease, Redisson's
// nonExpirableTimeout.
const NeverExpires = "922337203685477"

// expirablePrelude defines publish(v) and reclaim(limit), which reclaims at most limit
// expired permits (-1: all) and returns the new count, or nil when none had expired.
const expirablePrelude = `
local function publish(v)
	for cmd in string.gmatch(ARGV[2], '%S+') do
		redis.call(cmd, KEYS[3], v)
	end
end
local function reclaim(limit)
	local expired = redis.call('zrangebyscore', KEYS[2], 0, ARGV[1], 'limit', 0, limit)
	if #expired == 0 then
		return nil
	end
	local v = tonumber(redis.call('get', KEYS[1]) or '0') + #expired
	if v > 0 then
		publish(v)
	end
	for _, id in ipairs(expired) do
		redis.call('zrem', KEYS[2], id)
	end
	redis.call('incrby', KEYS[1], #expired)
	return v
end
`

func expirableScript(body string) Script { return newScript(expirablePrelude+body, false) }

// PermitsAcquire takes permits when enough are available.
//
//	ARGV[3] permits wanted
//	ARGV[4] score of the new permits: their expiry, or NeverExpires
//	ARGV[5…] the new permit ids, one per permit
//
// It reclaims at most ARGV[3] expired permits. When at least ARGV[3] are then available
// they are taken, each id is added with score ARGV[4], the timeouts get the TTL of the
// semaphore's key if it has one, and the reply is "OK". Otherwise nothing more changes and
// the reply is ":<score>", the expiry of the earliest held permit (when it expires at
// all), or nil.
var PermitsAcquire = expirableScript(`
reclaim(tonumber(ARGV[3]))
local v = redis.call('get', KEYS[1])
if v ~= false and tonumber(v) >= tonumber(ARGV[3]) then
	for i = 5, #ARGV do
		redis.call('zadd', KEYS[2], ARGV[4], ARGV[i])
	end
	redis.call('decrby', KEYS[1], ARGV[3])
	local ttl = redis.call('pttl', KEYS[1])
	if ttl > 0 then
		redis.call('pexpire', KEYS[2], ttl)
	end
	return 'OK'
end
local first = redis.call('zrange', KEYS[2], 0, 0, 'WITHSCORES')
if first[1] ~= nil and tonumber(first[2]) ~= tonumber('` + NeverExpires + `') then
	return ':' .. first[2]
end
return nil
`)

// PermitRelease gives back one permit by its id.
//
//	ARGV[3] permit id
//
// When the id is held it is removed, one permit is added and the new count published; the
// reply is 1, or 0 when the permit had expired (it is given back all the same). When the
// id is not held nothing changes and the reply is 0. It reclaims nothing else.
var PermitRelease = expirableScript(`
local expiry = redis.call('zscore', KEYS[2], ARGV[3])
if expiry == false then
	return 0
end
publish(tonumber(redis.call('get', KEYS[1]) or '0') + 1)
redis.call('zrem', KEYS[2], ARGV[3])
redis.call('incrby', KEYS[1], 1)
if tonumber(expiry) <= tonumber(ARGV[1]) then
	return 0
end
return 1
`)

// PermitsRelease gives back several permits by their ids, all or none.
//
//	ARGV[3…] permit ids
//
// When any id is not held or has expired nothing changes and the reply is 0. Otherwise the
// expired permits are reclaimed, the ids removed and as many permits added, the number
// removed is published and is the reply.
var PermitsRelease = expirableScript(`
for i = 3, #ARGV do
	local expiry = redis.call('zscore', KEYS[2], ARGV[i])
	if expiry == false or tonumber(expiry) <= tonumber(ARGV[1]) then
		return 0
	end
end
reclaim(-1)
local removed = #ARGV - 2
publish(removed)
for i = 3, #ARGV do
	redis.call('zrem', KEYS[2], ARGV[i])
end
redis.call('incrby', KEYS[1], removed)
return removed
`)

// PermitsCount reports a count after reclaiming every expired permit.
//
//	ARGV[3] "available", "acquired" or "permits" (available plus acquired)
//
// The reply is the count: 0 available when the key is missing, and 0 permits too.
var PermitsCount = expirableScript(`
reclaim(-1)
local v = redis.call('get', KEYS[1])
local held = redis.call('zcard', KEYS[2])
if ARGV[3] == 'acquired' then
	return held
end
if v == false then
	return 0
end
if ARGV[3] == 'available' then
	return tonumber(v)
end
return tonumber(v) + held
`)

// PermitsAdd adds permits, or removes them when ARGV[3] is negative.
//
//	ARGV[3] permits added
//
// The key is set to its count (0 when missing) plus ARGV[3]; a positive ARGV[3] is
// published (the number added, not the new count). The reply is the new count. It
// reclaims nothing.
var PermitsAdd = expirableScript(`
local v = tonumber(redis.call('get', KEYS[1]) or '0') + tonumber(ARGV[3])
if tonumber(ARGV[3]) > 0 then
	publish(ARGV[3])
end
redis.call('set', KEYS[1], v)
return v
`)

// PermitLease reads or changes the expiry of one held permit, after reclaiming every
// expired permit.
//
//	ARGV[3] permit id
//	ARGV[4] new score (expiry or NeverExpires), or "" to read only
//
// When the id is not held the reply is nil. Otherwise, when ARGV[4] is set, it becomes the
// permit's score and the reply is 1; when reading, the reply is the permit's remaining
// lease in milliseconds, or -1 for a permit that never expires.
var PermitLease = expirableScript(`
reclaim(-1)
local expiry = redis.call('zscore', KEYS[2], ARGV[3])
if expiry == false then
	return nil
end
if ARGV[4] ~= '' then
	redis.call('zadd', KEYS[2], ARGV[4], ARGV[3])
	return 1
end
if tonumber(expiry) == tonumber('` + NeverExpires + `') then
	return -1
end
return tonumber(expiry) - tonumber(ARGV[1])
`)
