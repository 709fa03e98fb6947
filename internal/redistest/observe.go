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

// Do runs cmd on rc, bounded by 10 s, and returns its result; it fails the test on an
// error other than a nil reply.
func Do(t testing.TB, rc rueidis.Client, cmd rueidis.Completed) rueidis.RedisResult {
	t.Helper()
	what := describe(cmd)
	ctx, cancel := context.WithTimeout(context.Background(), readTimeout)
	defer cancel()
	res := rc.Do(ctx, cmd)
	if err := res.Error(); err != nil && !rueidis.IsRedisNil(err) {
		t.Fatalf("redistest: %s: %v", what, err)
	}
	return res
}

// describe names cmd in messages by its first two words (command and key, or container
// command and subcommand). Call it before cmd is sent: rueidis recycles sent commands.
func describe(cmd rueidis.Completed) string {
	words := cmd.Commands()
	return strings.Join(words[:min(len(words), 2)], " ")
}

// read runs cmd on rc with [Do] and returns its reply converted by as, failing the test when
// the reply does not convert.
func read[T any](t testing.TB, rc rueidis.Client, cmd rueidis.Completed, as func(rueidis.RedisResult) (T, error)) T {
	t.Helper()
	what := describe(cmd)
	v, err := as(Do(t, rc, cmd))
	if err != nil {
		t.Fatalf("redistest: %s: %v", what, err)
	}
	return v
}

// HGetAll returns the hash at key (empty when the key does not exist) on the server or node
// behind rc, failing the test on error.
func HGetAll(t testing.TB, rc rueidis.Client, key string) map[string]string {
	t.Helper()
	return read(t, rc, rc.B().Hgetall().Key(key).Build(), rueidis.RedisResult.AsStrMap)
}

// PTTL returns the PTTL of key in milliseconds (-2 when the key does not exist, -1 when it
// has no TTL), failing the test on error.
func PTTL(t testing.TB, rc rueidis.Client, key string) int64 {
	t.Helper()
	return read(t, rc, rc.B().Pttl().Key(key).Build(), rueidis.RedisResult.AsInt64)
}

// Exists reports whether key exists, failing the test on error.
func Exists(t testing.TB, rc rueidis.Client, key string) bool {
	t.Helper()
	return read(t, rc, rc.B().Exists().Key(key).Build(), rueidis.RedisResult.AsInt64) == 1
}

// NumSub returns how many connections are subscribed to channel with SUBSCRIBE (PUBSUB
// NUMSUB) on the server or node behind rc, failing the test on error.
func NumSub(t testing.TB, rc rueidis.Client, channel string) int64 {
	t.Helper()
	return read(t, rc, rc.B().PubsubNumsub().Channel(channel).Build(), rueidis.RedisResult.AsIntMap)[channel]
}

// NumSubOf is [NumSub] for a caller that handles the error itself: one off the test's
// goroutine, or one that reads a node that may be down.
func NumSubOf(ctx context.Context, rc rueidis.Client, channel string) (int64, error) {
	m, err := rc.Do(ctx, rc.B().PubsubNumsub().Channel(channel).Build()).AsIntMap()
	return m[channel], err
}

// ShardNumSub returns how many connections are subscribed to channel with SSUBSCRIBE
// (PUBSUB SHARDNUMSUB) on the server or node behind rc, failing the test on error. A
// server without [ShardedPubSub] has none: 0.
func ShardNumSub(t testing.TB, rc rueidis.Client, channel string) int64 {
	t.Helper()
	if !Has(t, rc, ShardedPubSub) {
		return 0
	}
	return read(t, rc, rc.B().PubsubShardnumsub().Channel(channel).Build(), rueidis.RedisResult.AsIntMap)[channel]
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

// Calls is CommandCalls for the test goroutine: it fails t on error. Counting "pttl" counts
// the acquire attempts that found a lock held, since the acquire script calls PTTL exactly
// then: a waiter is asleep once the count rose by two (tried, subscribed, tried again).
func Calls(t testing.TB, rc rueidis.Client, command string) int64 {
	t.Helper()
	n, err := CommandCalls(context.Background(), rc, command)
	if err != nil {
		t.Fatalf("redistest: INFO commandstats: %v", err)
	}
	return n
}
