package rlock

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/rueidis"

	"github.com/goredisson/goredisson/internal/keys"
	"github.com/goredisson/goredisson/lua"
	"github.com/goredisson/goredisson/pubsub"
)

// permError is a refusal by Redis's ACL: what the user lacks, when it could be told, and
// Redis's reply.
type permError struct {
	denied string // "" when unknown
	err    error
}

func (e *permError) Error() string {
	if e.denied == "" {
		return fmt.Sprintf("%s: %v", ErrNoPermission.Error(), e.err)
	}
	return fmt.Sprintf("%s: the user may not %s: %v", ErrNoPermission.Error(), e.denied, e.err)
}

func (e *permError) Is(target error) bool { return target == ErrNoPermission }

func (e *permError) Unwrap() error { return e.err }

// refused reports whether err is Redis refusing a command, key or channel to the user.
func refused(err error) bool {
	var re *rueidis.RedisError
	return errors.As(err, &re) && refusal(re.Error())
}

// refusal reports whether msg, a Redis error reply, is a refusal by the ACL, in the words of
// every server line: NOPERM for a command called directly; for a call a script made, "The
// user executing the script can't …" (Redis 7.0) or "ACL failure in script: …" (Redis 7.2
// and later, Valkey), with or without a NOPERM or ERR code in front.
func refusal(msg string) bool {
	return strings.HasPrefix(msg, "NOPERM") ||
		strings.Contains(msg, "ACL failure in script") ||
		strings.Contains(msg, "The user executing the script can't")
}

// needs is what an object's calls use: the calls its scripts and queries make (a command
// with arguments of the right number, on the object's own keys), the keys it names as a
// script's KEYS, and its channel when it has pub/sub.
type needs struct {
	calls   [][]string
	keys    []string
	channel string // "" without pub/sub
}

// probeTimeout bounds the script that asks the server what the user lacks.
const probeTimeout = 2 * time.Second

// classify returns err as a call's caller sees it: a WRONGTYPE reply matching ErrWrongType
// (see wrongType); a refusal by Redis's ACL matching ErrNoPermission (and wrapping err),
// naming what the user lacks among n; any other err unchanged. Redis names the command of a refused call but neither the key nor the
// channel, nor the command a script was refused; so the server is asked, with
// redis.acl_check_cmd in a script (Redis 7+), which of n's calls, keys and channels the
// user may not use. When that cannot be told, the error carries Redis's reply alone.
func (c *Client) classify(n needs, err error) error {
	err = wrongType(err)
	if err == nil || !refused(err) || errors.Is(err, ErrNoPermission) {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), probeTimeout)
	defer cancel()
	denied, perr := c.denied(ctx, n)
	if perr != nil || len(denied) == 0 {
		return &permError{err: err}
	}
	return &permError{denied: strings.Join(denied, ", "), err: err}
}

// check is one question for redis.acl_check_cmd: may the user make this call. Every call
// has the number of arguments its command takes: Redis 7.0 reads a command's keys at their
// places without checking, and acl_check_cmd with too few arguments can crash the server.
type check struct {
	what string
	call []string
	key  string // the key the call names, if any
}

// denied asks the server which of n the user may not use, and describes them.
func (c *Client) denied(ctx context.Context, n needs) ([]string, error) {
	sha := lua.Acquire.SHA1()
	checks := []check{
		{what: "run EVALSHA", call: []string{"evalsha", sha, "0"}},
		{what: "run EVAL", call: []string{"eval", "return 0", "0"}},
	}
	for _, k := range n.keys {
		// A script's keys are checked as EVALSHA's: read and write.
		checks = append(checks, check{what: "use the key " + k, call: []string{"evalsha", sha, "1", k}, key: k})
	}
	for _, call := range n.calls {
		checks = append(checks, check{what: "run " + strings.ToUpper(call[0]), call: call, key: call[1]})
	}
	if n.channel != "" {
		for _, cmd := range c.publish {
			checks = append(checks, check{what: cmd + " on " + n.channel, call: []string{strings.ToLower(cmd), n.channel, "0"}})
		}
		if c.listen.Has(pubsub.Sharded) {
			checks = append(checks,
				check{what: "SSUBSCRIBE to " + n.channel, call: []string{"ssubscribe", n.channel}},
				check{what: "run SUNSUBSCRIBE", call: []string{"sunsubscribe", n.channel}})
		}
		if c.listen.Has(pubsub.Classic) || c.listen == 0 {
			checks = append(checks,
				check{what: "SUBSCRIBE to " + n.channel, call: []string{"subscribe", n.channel}},
				check{what: "run UNSUBSCRIBE", call: []string{"unsubscribe", n.channel}})
		}
	}
	var args []string
	for _, ch := range checks {
		args = append(args, strconv.Itoa(len(ch.call)))
		args = append(args, ch.call...)
	}
	// A keyless script: the keys are arguments of the checks.
	idx, err := c.rc.Do(ctx, c.rc.B().Eval().Script(aclProbe).Numkeys(0).Arg(args...).Build()).AsIntSlice()
	if err != nil {
		return nil, err
	}
	refusedAt := map[int]bool{}
	for _, i := range idx {
		if i < 1 || int(i) > len(checks) {
			return nil, fmt.Errorf("rlock: ACL probe replied %d of %d checks", i, len(checks))
		}
		refusedAt[int(i)-1] = true
	}
	deniedKey := map[string]bool{}
	var out []string
	for i, ch := range checks {
		switch {
		case !refusedAt[i]:
		case ch.call[0] == "evalsha" && len(ch.call) > 3 && refusedAt[0]:
			// EVALSHA itself is refused: its keys cannot be told.
		case ch.key != "" && ch.call[0] != "evalsha" && deniedKey[ch.key]:
			// The key is refused: the command on it cannot be told.
		default:
			if ch.call[0] == "evalsha" && ch.key != "" {
				deniedKey[ch.key] = true
			}
			out = append(out, ch.what)
		}
	}
	return out, nil
}

// aclProbe answers, for each check in ARGV (a count, then that many words: a command and
// its arguments), whether the user may run it; it replies the 1-based indexes of the checks
// refused.
const aclProbe = `
local denied = {}
local i, k = 1, 1
while i <= #ARGV do
	local n = tonumber(ARGV[i])
	local call = {}
	for j = 1, n do
		call[j] = ARGV[i + j]
	end
	if not redis.acl_check_cmd(unpack(call)) then
		denied[#denied + 1] = k
	end
	i, k = i + n + 1, k + 1
end
return denied
`

// needs returns what l's calls use.
func (l *Lock) needs() needs {
	latch := keys.UnlockLatch(l.name, strings.Repeat("0", 32))
	n := needs{
		calls: [][]string{
			{"exists", l.name}, {"hexists", l.name, "f"}, {"hget", l.name, "f"},
			{"hincrby", l.name, "f", "1"}, {"pexpire", l.name, "1"}, {"pttl", l.name},
			{"get", latch}, {"set", latch, "0"}, {"del", l.name},
		},
		keys: []string{l.name, latch, l.channel},
	}
	switch l.kind {
	case fenced:
		n.calls = append(n.calls, []string{"incr", l.tokenKey})
		n.keys = append(n.keys, l.tokenKey)
	case fair:
		q, t := l.fair.queue, l.fair.timeout
		n.calls = append(n.calls, []string{"hset", l.name, "f", "1"},
			[]string{"lindex", q, "0"}, []string{"lpop", q}, []string{"rpush", q, "f"},
			[]string{"lrange", q, "0", "-1"}, []string{"lrem", q, "0", "f"},
			[]string{"zadd", t, "0", "f"}, []string{"zrem", t, "f"}, []string{"zscore", t, "f"},
			[]string{"zrange", t, "0", "-1"}, []string{"zincrby", t, "1", "f"})
		n.keys = append(n.keys, q, t)
	case readLock, writeLock:
		// A read hold's timeout key, named by its script rather than passed in KEYS.
		timeout := keys.ReadTimeoutPrefix(l.name, strings.Repeat("0", 32)) + ":1"
		n.calls = append(n.calls, []string{"hset", l.name, "mode", "read"}, []string{"hdel", l.name, "f"},
			[]string{"hlen", l.name}, []string{"hkeys", l.name},
			[]string{"set", timeout, "1"}, []string{"pexpire", timeout, "1"}, []string{"pttl", timeout},
			[]string{"del", timeout})
		n.keys = append(n.keys, timeout)
	}
	if l.kind != spin {
		n.channel = l.channel
	}
	return n
}

// needs returns what s's calls use.
func (s *ExpirableSemaphore) needs() needs {
	return needs{
		calls: [][]string{{"exists", s.name}, {"get", s.name}, {"set", s.name, "0"},
			{"incrby", s.name, "1"}, {"decrby", s.name, "1"}, {"pttl", s.name}, {"del", s.name},
			{"zadd", s.timeouts, "0", "p"}, {"zrem", s.timeouts, "p"}, {"zscore", s.timeouts, "p"},
			{"zrange", s.timeouts, "0", "0"}, {"zrangebyscore", s.timeouts, "0", "1"},
			{"zcard", s.timeouts}, {"pexpire", s.timeouts, "1"}},
		keys:    []string{s.name, s.timeouts, s.channel},
		channel: s.channel,
	}
}
