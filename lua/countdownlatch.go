package lua

// The scripts of the countdown latch, Redisson's RCountDownLatch. The latch is a string key
// holding the count; its channel is "redisson_countdownlatch__channel__{name}". Each script
// takes the publish commands ("PUBLISH", "SPUBLISH" or both) as its last arguments and
// publishes its message once per command, before it writes: a publish the server refuses
// (an ACL user without it) fails the script with nothing changed.

// LatchCountDown decrements the count of a latch.
//
//	KEYS[1] latch name
//	KEYS[2] latch channel
//	ARGV[1] message published when the count reaches zero: "0"
//	ARGV[2…] publish commands
//
// The count is decremented (a missing key counts as 0); at zero or below the key is deleted,
// and at exactly zero ARGV[1] is published. The reply is nil.
var LatchCountDown = newScript(`
local v = tonumber(redis.call('get', KEYS[1]) or '0') - 1
if v == 0 then
`+publishAll("2", "ARGV[1]")+`end
if v <= 0 then
	redis.call('del', KEYS[1])
else
	redis.call('decr', KEYS[1])
end
`, false)

// LatchDelete deletes a latch.
//
//	KEYS[1] latch name
//	KEYS[2] latch channel
//	ARGV[1] message published when the key existed: "1"
//	ARGV[2…] publish commands
//
// When the key existed it is deleted, ARGV[1] is published and the reply is 1; otherwise the
// reply is 0. The key is read with GET, so that a key of another type (a lock's hash) gets
// Redis's WRONGTYPE error and is not deleted.
var LatchDelete = newScript(`
if redis.call('get', KEYS[1]) then
`+publishAll("2", "ARGV[1]")+`	redis.call('del', KEYS[1])
	return 1
end
return 0
`, false)
