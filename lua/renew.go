package lua

// Renew extends the leases of a batch of locks, each only while its holder still holds it.
//
//	KEYS[i]   lock name i (in a cluster, all in one hash slot)
//	ARGV[1]   lease in milliseconds
//	ARGV[i+1] holder field of lock i
//
// For each lock whose field exists the key's TTL is set to the lease. The reply is an array
// with one integer per key: 1 renewed, 0 the field is gone (the lock is no longer held by
// it). Renewal never creates a key, so retrying it is safe.
var Renew = newScript(`
local renewed = {}
for i = 1, #KEYS do
	if redis.call('hexists', KEYS[i], ARGV[i + 1]) == 1 then
		redis.call('pexpire', KEYS[i], ARGV[1])
		renewed[i] = 1
	else
		renewed[i] = 0
	end
end
return renewed
`, true)
