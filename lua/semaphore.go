package lua

// The scripts of the semaphore, Redisson's RSemaphore. The semaphore is a string key holding
// the available permits; its channel is "redisson_sc:{name}". The scripts that publish take
// the publish commands ("PUBLISH", "SPUBLISH" or both) as their last arguments and publish
// the new number of available permits once per command, before they write: a publish the
// server refuses (an ACL user without it) fails the script with nothing changed.

// SemaphoreTryAcquire takes permits when enough are available.
//
//	KEYS[1] semaphore name
//	ARGV[1] permits wanted
//
// When the key holds at least ARGV[1] permits they are taken (DECRBY) and the reply is 1;
// otherwise nothing changes and the reply is 0. A missing key has no permits.
var SemaphoreTryAcquire = newScript(`
local v = redis.call('get', KEYS[1])
if v ~= false and tonumber(v) >= tonumber(ARGV[1]) then
	redis.call('decrby', KEYS[1], ARGV[1])
	return 1
end
return 0
`, false)

// SemaphoreRelease gives permits back.
//
//	KEYS[1] semaphore name
//	KEYS[2] semaphore channel
//	ARGV[1] permits released
//	ARGV[2…] publish commands
//
// The count is incremented by ARGV[1] (a missing key counts as 0), the new count is
// published and is the reply.
var SemaphoreRelease = newScript(`
local v = tonumber(redis.call('get', KEYS[1]) or '0') + tonumber(ARGV[1])
for i = 2, #ARGV do
	redis.call(ARGV[i], KEYS[2], v)
end
redis.call('incrby', KEYS[1], ARGV[1])
return v
`, false)

// TrySet sets a string key that does not exist, the count of a latch or the permits of a
// semaphore, and announces it.
//
//	KEYS[1] name
//	KEYS[2] channel
//	ARGV[1] message published when the key is set (a latch: "1"; a semaphore: the permits)
//	ARGV[2] value
//	ARGV[3…] publish commands
//
// When the key is missing it is set to ARGV[2], ARGV[1] is published once per publish
// command and the reply is 1; otherwise nothing changes and the reply is 0.
var TrySet = newScript(`
if redis.call('exists', KEYS[1]) == 0 then
	for i = 3, #ARGV do
		redis.call(ARGV[i], KEYS[2], ARGV[1])
	end
	redis.call('set', KEYS[1], ARGV[2])
	return 1
end
return 0
`, false)

// SemaphoreAddPermits adds permits, or removes them when ARGV[1] is negative.
//
//	KEYS[1] semaphore name
//	KEYS[2] semaphore channel
//	ARGV[1] permits added
//	ARGV[2…] publish commands
//
// The key is set to its count (0 when missing) plus ARGV[1]; the new count is published and
// is the reply.
var SemaphoreAddPermits = newScript(`
local v = tonumber(redis.call('get', KEYS[1]) or '0') + tonumber(ARGV[1])
for i = 2, #ARGV do
	redis.call(ARGV[i], KEYS[2], v)
end
redis.call('set', KEYS[1], v)
return v
`, false)

// SemaphoreDrain takes every available permit.
//
//	KEYS[1] semaphore name
//
// When the key exists it is set to 0 and the reply is the count it held; a missing key stays
// missing and the reply is 0.
var SemaphoreDrain = newScript(`
local v = redis.call('get', KEYS[1])
if v == false then
	return 0
end
redis.call('set', KEYS[1], 0)
return tonumber(v)
`, false)
