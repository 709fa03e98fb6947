package redistest

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/rueidis"
)

// readTimeout bounds each read of the helpers below that fail the test.
const readTimeout = 10 * time.Second

// mustDo runs cmd on rc, bounded by readTimeout, and fails t with what on an error other than
// a nil reply.
func mustDo(t testing.TB, rc rueidis.Client, what string, cmd rueidis.Completed) rueidis.RedisResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), readTimeout)
	defer cancel()
	res := rc.Do(ctx, cmd)
	if err := res.Error(); err != nil && !rueidis.IsRedisNil(err) {
		t.Fatalf("redistest: %s: %v", what, err)
	}
	return res
}

// HGetAll returns the hash at key (empty when the key does not exist) on the server or node
// behind rc, failing the test on error.
func HGetAll(t testing.TB, rc rueidis.Client, key string) map[string]string {
	t.Helper()
	m, err := mustDo(t, rc, "HGETALL "+key, rc.B().Hgetall().Key(key).Build()).AsStrMap()
	if err != nil {
		t.Fatalf("redistest: HGETALL %s: %v", key, err)
	}
	return m
}

// PTTL returns the PTTL of key in milliseconds (-2 when the key does not exist, -1 when it
// has no TTL), failing the test on error.
func PTTL(t testing.TB, rc rueidis.Client, key string) int64 {
	t.Helper()
	n, err := mustDo(t, rc, "PTTL "+key, rc.B().Pttl().Key(key).Build()).AsInt64()
	if err != nil {
		t.Fatalf("redistest: PTTL %s: %v", key, err)
	}
	return n
}

// Exists reports whether key exists, failing the test on error.
func Exists(t testing.TB, rc rueidis.Client, key string) bool {
	t.Helper()
	n, err := mustDo(t, rc, "EXISTS "+key, rc.B().Exists().Key(key).Build()).AsInt64()
	if err != nil {
		t.Fatalf("redistest: EXISTS %s: %v", key, err)
	}
	return n == 1
}

// NumSub returns how many connections are subscribed to channel with SUBSCRIBE (PUBSUB
// NUMSUB) on the server or node behind rc, failing the test on error.
func NumSub(t testing.TB, rc rueidis.Client, channel string) int64 {
	t.Helper()
	m, err := mustDo(t, rc, "PUBSUB NUMSUB "+channel, rc.B().PubsubNumsub().Channel(channel).Build()).AsIntMap()
	if err != nil {
		t.Fatalf("redistest: PUBSUB NUMSUB %s: %v", channel, err)
	}
	return m[channel]
}

// ShardNumSub returns how many connections are subscribed to channel with SSUBSCRIBE
// (PUBSUB SHARDNUMSUB) on the server or node behind rc, failing the test on error.
func ShardNumSub(t testing.TB, rc rueidis.Client, channel string) int64 {
	t.Helper()
	m, err := mustDo(t, rc, "PUBSUB SHARDNUMSUB "+channel, rc.B().PubsubShardnumsub().Channel(channel).Build()).AsIntMap()
	if err != nil {
		t.Fatalf("redistest: PUBSUB SHARDNUMSUB %s: %v", channel, err)
	}
	return m[channel]
}

// CommandStats returns the calls of every command that has run on the server or node behind
// rc, from its INFO commandstats, by the names INFO gives them: lowercase, with the
// subcommand of a container command after "|" ("evalsha", "pubsub|numsub"). Commands that
// scripts run are counted; a command that never ran is absent.
func CommandStats(ctx context.Context, rc rueidis.Client) (map[string]int64, error) {
	info, err := rc.Do(ctx, rc.B().Info().Section("commandstats").Build()).ToString()
	if err != nil {
		return nil, err
	}
	out := map[string]int64{}
	for line := range strings.Lines(info) {
		name, rest, ok := strings.Cut(strings.TrimSpace(line), ":")
		if !ok || !strings.HasPrefix(name, "cmdstat_") {
			continue
		}
		for _, kv := range strings.Split(rest, ",") {
			if k, v, _ := strings.Cut(kv, "="); k == "calls" {
				n, err := strconv.ParseInt(v, 10, 64)
				if err != nil {
					return nil, err
				}
				out[strings.TrimPrefix(name, "cmdstat_")] = n
			}
		}
	}
	return out, nil
}

// CommandCalls returns how many times command (lowercase, e.g. "pttl") has run on the
// server or node behind rc, from its INFO commandstats: 0 before the first call. Commands
// that scripts run are counted.
func CommandCalls(ctx context.Context, rc rueidis.Client, command string) (int64, error) {
	stats, err := CommandStats(ctx, rc)
	return stats[command], err
}

// ClientConn is one connection in the reply of CLIENT LIST.
type ClientConn struct {
	ID         int64
	Addr, Name string
	Sub, SSub  int // channels subscribed with SUBSCRIBE and with SSUBSCRIBE
}

// Subscribed reports whether the connection is subscribed to at least one channel, of
// either kind.
func (c ClientConn) Subscribed() bool { return c.Sub > 0 || c.SSub > 0 }

// ParseClientList parses the reply of CLIENT LIST, one ClientConn a line.
func ParseClientList(reply string) []ClientConn {
	var out []ClientConn
	for line := range strings.Lines(reply) {
		if strings.TrimSpace(line) == "" {
			continue
		}
		var c ClientConn
		for _, f := range strings.Fields(line) {
			k, v, _ := strings.Cut(f, "=")
			switch k {
			case "id":
				c.ID, _ = strconv.ParseInt(v, 10, 64)
			case "addr":
				c.Addr = v
			case "name":
				c.Name = v
			case "sub":
				c.Sub, _ = strconv.Atoi(v)
			case "ssub":
				c.SSub, _ = strconv.Atoi(v)
			}
		}
		out = append(out, c)
	}
	return out
}
