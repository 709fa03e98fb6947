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

// refused reports whether err is Redis refusing a command, key or channel to the user:
// NOPERM, or the error of a script whose call the ACL refused.
func refused(err error) bool {
	var re *rueidis.RedisError
	if !errors.As(err, &re) {
		return false
	}
	msg := re.Error()
	return strings.HasPrefix(msg, "NOPERM") || strings.Contains(msg, "The user executing the script can't")
}

// needs is what an object's calls use: the commands it runs (scripts' calls included), the
// keys it names (as a script's KEYS), and its channel when it has pub/sub.
type needs struct {
	commands []string
	keys     []string
	channel  string // "" without pub/sub
}

// probeTimeout bounds the script that asks the server what the user lacks.
const probeTimeout = 2 * time.Second

// permission returns err unchanged unless Redis refused something to the user; then it
// returns an error matching ErrNoPermission (and wrapping err) that names what the user
// lacks among n. Redis names the command of a refused call but neither the key nor the
// channel, nor the command a script was refused; so the server is asked, with
// redis.acl_check_cmd in a script (Redis 7+), which of n's commands, keys and channels the
// user may not use. When that cannot be told, the error carries Redis's reply alone.
func (c *Client) permission(n needs, err error) error {
	if err == nil || !refused(err) {
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

// check is one question for redis.acl_check_cmd: may the user run this command with these
// arguments.
type check struct {
	what string
	call []string
}

// denied asks the server which of n the user may not use, and describes them.
func (c *Client) denied(ctx context.Context, n needs) ([]string, error) {
	var checks []check
	for _, cmd := range n.commands {
		checks = append(checks, check{"run " + strings.ToUpper(cmd), []string{cmd}})
	}
	var subscribe []string
	if n.channel != "" {
		for _, cmd := range c.publish {
			checks = append(checks, check{"run " + cmd, []string{cmd}})
		}
		if c.listen.Has(pubsub.Sharded) {
			subscribe = append(subscribe, "ssubscribe", "sunsubscribe")
		}
		if c.listen.Has(pubsub.Classic) || c.listen == 0 {
			subscribe = append(subscribe, "subscribe", "unsubscribe")
		}
		for _, cmd := range subscribe {
			checks = append(checks, check{"run " + strings.ToUpper(cmd), []string{cmd}})
		}
	}
	commands := len(checks)
	for _, k := range n.keys {
		// A script's keys are checked as EVALSHA's: read and write.
		checks = append(checks, check{"use the key " + k, []string{"evalsha", lua.Acquire.SHA1(), "1", k}})
	}
	if n.channel != "" {
		for _, cmd := range c.publish {
			checks = append(checks, check{cmd + " on " + n.channel, []string{cmd, n.channel, "0"}})
		}
		if len(subscribe) > 0 {
			checks = append(checks, check{"subscribe to " + n.channel, []string{subscribe[0], n.channel}})
		}
	}
	var args []string
	for _, ch := range checks {
		args = append(args, strconv.Itoa(len(ch.call)))
		args = append(args, ch.call...)
	}
	// A keyless script: the keys are arguments of the checks, which must not need them.
	idx, err := c.rc.Do(ctx, c.rc.B().Eval().Script(aclProbe).Numkeys(0).Arg(args...).Build()).AsIntSlice()
	if err != nil {
		return nil, err
	}
	var out []string
	deniedCmd := map[string]bool{}
	for _, i := range idx {
		if i < 1 || int(i) > len(checks) {
			return nil, fmt.Errorf("rlock: ACL probe replied %d of %d checks", i, len(checks))
		}
		ch := checks[i-1]
		if int(i) <= commands {
			deniedCmd[ch.call[0]] = true
		} else if deniedCmd[ch.call[0]] {
			continue // the command is refused: its key or channel cannot be told
		}
		out = append(out, ch.what)
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

// lockCommands are the commands of every lock type's scripts and queries.
var lockCommands = []string{"evalsha", "eval", "exists", "hexists", "hget", "hincrby", "pexpire", "pttl", "get", "set", "del"}

// needs returns what l's calls use.
func (l *Lock) needs() needs {
	n := needs{
		commands: lockCommands,
		keys:     []string{l.name, keys.UnlockLatch(l.name, strings.Repeat("0", 32)), l.channel},
	}
	if l.kind == fenced {
		n.commands = append(n.commands[:len(n.commands):len(n.commands)], "incr")
		n.keys = append(n.keys, l.tokenKey)
	}
	if l.kind != spin {
		n.channel = l.channel
	}
	return n
}
