package main

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/rueidis"

	"github.com/goredisson/goredisson/internal/keys"
)

// Kinds of key that inspect reports.
const (
	kindLock     = "lock"      // a hash in Redisson's RLock layout
	kindNotFound = "not_found" // no key: the lock is free
	kindOther    = "other"     // a key that is not an RLock hash
)

// Runtimes that inspect attributes to a holder.
const (
	runtimeUnknown = "unknown"
	runtimeJava    = "java"
)

// lockState is what inspect prints for one name; its JSON form is documented in
// inspect's help and is stable.
type lockState struct {
	Name        string      `json:"name"`
	Kind        string      `json:"kind"`
	RedisType   string      `json:"redis_type"`
	Variant     string      `json:"variant,omitempty"`
	Mode        string      `json:"mode,omitempty"` // read-write locks: "read" or "write"
	TTLMillis   *int64      `json:"ttl_ms"`
	Holders     []holder    `json:"holders"`
	Channel     string      `json:"channel"`
	Subscribers subscribers `json:"subscribers"`
	Queue       []queued    `json:"queue,omitempty"` // a fair lock's waiters, first first
	Notes       []string    `json:"notes"`

	// The synchronizers (syncstate.go): the latch count or the available permits, and the
	// permits held from an expirable semaphore.
	Count   *int64   `json:"count,omitempty"`
	Permits []permit `json:"permits,omitempty"`
}

type holder struct {
	Field       string `json:"field"`
	ClientID    string `json:"client_id"`
	OwnerID     string `json:"owner_id"`
	HoldCount   int64  `json:"hold_count"`
	Runtime     string `json:"runtime"`      // "go", "java" or "unknown"
	RuntimeHint string `json:"runtime_hint"` // why, in words
	// A Go holder's connection (CLIENT LIST): its address and its name.
	Address        string `json:"address,omitempty"`
	ConnectionName string `json:"connection_name,omitempty"`
	// Read-write locks only: "reader" or "writer", and a reader's timeout keys' PTTLs.
	Role               string  `json:"role,omitempty"`
	ReadTimeoutsMillis []int64 `json:"read_timeouts_ms,omitempty"`
}

type subscribers struct {
	Classic *int64 `json:"classic"` // PUBSUB NUMSUB
	Sharded *int64 `json:"sharded"` // PUBSUB SHARDNUMSUB; null when the server lacks it (< 7.0)
}

// Variants of a lock hash that inspect recognises.
const (
	variantFair      = "redisson_fair_lock"       // a fair lock's queue or timeout set exists
	variantReadWrite = "redisson_read_write_lock" // Redisson RReadWriteLock hash ("mode" field)
)

var (
	// holderField is "<client-uuid>:<owner-id>" as both Redisson and goredisson write it.
	holderField = regexp.MustCompile(`^([0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}):([0-9]+)$`)
	// rwHolderField is a Redisson RReadWriteLock holder: "<uuid>:<thread>" or "<uuid>:<thread>:write".
	rwHolderField = regexp.MustCompile(`^([0-9a-fA-F-]{36}):([0-9]+)(:write)?$`)
)

// snapshot reads a key's type, PTTL and, for a hash, its fields at one moment: a lock
// released between separate reads would otherwise show a holder without a TTL.
// A string's value is the one element of the fields; KEYS[2], the permit timeouts of an
// expirable semaphore of the same name, is read in the same moment (ZRANGE WITHSCORES).
var snapshot = newReadScript(`
local t = redis.call('TYPE', KEYS[1])['ok']
local fields = {}
if t == 'hash' then fields = redis.call('HGETALL', KEYS[1]) end
if t == 'string' then fields = {redis.call('GET', KEYS[1])} end
return {t, redis.call('PTTL', KEYS[1]), fields, redis.call('ZRANGE', KEYS[2], 0, -1, 'WITHSCORES')}`)

// readLock reads the state of lock name: the key itself at one moment (a script), then the
// keys of a fair lock (another script) and the subscriber counts, each a moment later.
func readLock(ctx context.Context, rc rueidis.Client, name string) (*lockState, error) {
	st := &lockState{Name: name, Channel: keys.LockChannel(name), Holders: []holder{}, Notes: []string{}}
	reply, err := snapshot.Exec(ctx, rc, []string{name, keys.PermitTimeouts(name)}, nil).ToArray()
	if err == nil && len(reply) != 4 {
		err = fmt.Errorf("unexpected reply of %d elements", len(reply))
	}
	if err != nil {
		return nil, fmt.Errorf("read %s (TYPE, PTTL, HGETALL in a script): %w", name, err)
	}
	if st.RedisType, err = reply[0].ToString(); err != nil {
		return nil, fmt.Errorf("read %s: TYPE: %w", name, err)
	}
	ms, err := reply[1].AsInt64()
	if err != nil {
		return nil, fmt.Errorf("read %s: PTTL: %w", name, err)
	}
	held, err := reply[3].AsZScores()
	if err != nil {
		return nil, fmt.Errorf("read %s: ZRANGE: %w", keys.PermitTimeouts(name), err)
	}
	switch {
	case len(held) > 0 || st.RedisType == "string" && isInteger(reply[2]):
		if err := readSynchronizer(ctx, rc, st, reply[2], held); err != nil {
			return nil, err
		}
		if st.RedisType != "none" {
			st.TTLMillis = &ms
		}
		return st, nil
	case st.RedisType == "none":
		st.Kind = kindNotFound
	case st.RedisType == "hash":
		fields, err := reply[2].AsStrMap()
		if err != nil {
			return nil, fmt.Errorf("read %s: HGETALL: %w", name, err)
		}
		if err := readHash(ctx, rc, st, fields); err != nil {
			return nil, err
		}
		identifyHolders(ctx, rc, st)
	default:
		st.Kind = kindOther
		st.Notes = append(st.Notes, fmt.Sprintf("a %s key, not a lock: an RLock is a hash", st.RedisType))
	}
	if st.Kind != kindNotFound {
		st.TTLMillis = &ms
		if ms == -1 && (st.Kind == kindLock || st.Kind == kindReadWrite) {
			st.Notes = append(st.Notes, "no TTL: the lock never expires by itself; if its holder is gone, only force-unlock frees it")
		}
	}
	if st.Kind == kindLock || st.Kind == kindNotFound {
		if err := readFairQueue(ctx, rc, st); err != nil {
			return nil, err
		}
	}
	if err := readSubscribers(ctx, rc, st); err != nil {
		return nil, err
	}
	return st, nil
}

// readHash fills st from the fields of the hash at st.Name.
func readHash(ctx context.Context, rc rueidis.Client, st *lockState, fields map[string]string) error {
	names := make([]string, 0, len(fields))
	for f := range fields {
		names = append(names, f)
	}
	slices.Sort(names)

	if _, ok := fields["mode"]; ok { // Redisson's RReadWriteLock, or goredisson's NewReadWriteLock
		return readReadWrite(ctx, rc, st, fields, names)
	}

	st.Kind = kindLock
	for _, f := range names {
		m := holderField.FindStringSubmatch(f)
		n, err := strconv.ParseInt(fields[f], 10, 64)
		if m == nil || err != nil || n < 1 {
			st.Kind, st.Holders = kindOther, []holder{}
			st.Notes = append(st.Notes, fmt.Sprintf(
				"a hash whose field %q -> %q is not \"<client-uuid>:<owner-id>\" -> hold count: not an RLock", f, fields[f]))
			return nil
		}
		st.Holders = append(st.Holders, holder{Field: f, ClientID: m[1], OwnerID: m[2], HoldCount: n,
			Runtime: runtimeUnknown, RuntimeHint: runtimeHint(m[2])})
	}
	if len(st.Holders) > 1 {
		st.Notes = append(st.Notes, "more than one holder: an RLock has at most one, so something else wrote fields into this hash")
	}
	return nil
}

// runtimeHint says what an owner id tells about the holder's runtime: not much.
func runtimeHint(owner string) string {
	return fmt.Sprintf("owner %s is a Java thread id or a goredisson owner number: both are positive integers "+
		"counted per process, and the field looks the same, so Redis alone cannot tell Java from Go", owner)
}

// readSubscribers counts the clients subscribed to the lock's channel. Each client, Java or
// Go, keeps one subscription per channel however many of its threads or goroutines wait.
func readSubscribers(ctx context.Context, rc rueidis.Client, st *lockState) error {
	m, err := rc.Do(ctx, rc.B().PubsubNumsub().Channel(st.Channel).Build()).AsIntMap()
	if err != nil {
		return fmt.Errorf("PUBSUB NUMSUB %s: %w", st.Channel, err)
	}
	n := m[st.Channel]
	st.Subscribers.Classic = &n
	m, err = rc.Do(ctx, rc.B().PubsubShardnumsub().Channel(st.Channel).Build()).AsIntMap()
	if _, isRedis := rueidis.IsRedisErr(err); isRedis {
		return nil // a server before 7.0: no sharded pub/sub
	}
	if err != nil {
		return fmt.Errorf("PUBSUB SHARDNUMSUB %s: %w", st.Channel, err)
	}
	s := m[st.Channel]
	st.Subscribers.Sharded = &s
	return nil
}

// found reports whether inspect recognised st: a lock or a synchronizer.
func (st *lockState) found() bool { return st.Kind != kindNotFound && st.Kind != kindOther }

// isLock reports whether st is an RLock that force-unlock may delete.
func (st *lockState) isLock() bool { return st.Kind == kindLock }

// fields returns the holder fields, sorted, to compare two reads.
func (st *lockState) fields() []string {
	out := make([]string, len(st.Holders))
	for i, h := range st.Holders {
		out[i] = h.Field
	}
	return out
}

// text renders st for a person.
func (st *lockState) text() string {
	var b strings.Builder
	switch st.Kind {
	case kindNotFound:
		fmt.Fprintf(&b, "%s: not found (no such key: the lock is free)\n", st.Name)
	case kindOther:
		fmt.Fprintf(&b, "%s: other (Redis type %s, not a Redisson RLock)\n", st.Name, st.RedisType)
	case kindReadWrite:
		b.WriteString(st.rwHeader())
	case kindLock:
		fmt.Fprintf(&b, "%s: lock (hash in Redisson RLock layout: \"<client-uuid>:<owner-id>\" -> hold count)\n", st.Name)
	default:
		st.syncText(&b)
	}
	if st.TTLMillis != nil {
		fmt.Fprintf(&b, "  ttl:      %s\n", fmtTTL(*st.TTLMillis))
	}
	if st.Kind != kindNotFound && (st.Kind == kindLock || st.Kind == kindReadWrite || len(st.Holders) > 0) {
		fmt.Fprintf(&b, "  holders:  %d\n", len(st.Holders))
		for _, h := range st.Holders {
			if h.Role != "" {
				b.WriteString(rwHolderText(h))
			} else {
				fmt.Fprintf(&b, "    client %s  owner %s  hold count %d\n", h.ClientID, h.OwnerID, h.HoldCount)
			}
			fmt.Fprintf(&b, "      runtime %s: %s\n", h.Runtime, h.RuntimeHint)
		}
	}
	fmt.Fprint(&b, st.queueText())
	fmt.Fprintf(&b, "  waiters:  %s\n", st.Subscribers.text(st.Channel))
	for _, n := range st.Notes {
		fmt.Fprintf(&b, "  note:     %s\n", n)
	}
	return b.String()
}

func (s subscribers) text(channel string) string {
	classic, sharded := "?", "n/a (server without sharded pub/sub)"
	if s.Classic != nil {
		classic = plural(*s.Classic, "client", "clients")
	}
	if s.Sharded != nil {
		sharded = plural(*s.Sharded, "client", "clients")
	}
	return fmt.Sprintf("%s subscribed to %s (PUBSUB NUMSUB), %s sharded (PUBSUB SHARDNUMSUB)", classic, channel, sharded)
}

func plural(n int64, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return strconv.FormatInt(n, 10) + " " + many
}

// fmtTTL renders a PTTL reply.
func fmtTTL(ms int64) string {
	if ms == -1 {
		return "none (the key never expires)"
	}
	return (time.Duration(ms) * time.Millisecond).String()
}
