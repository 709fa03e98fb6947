// Package keys builds the Redis key and channel names that Redisson derives from a lock name,
// and computes Redis Cluster hash slots. It is pure logic and talks to no server.
package keys
