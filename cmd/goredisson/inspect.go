package main

import (
	"encoding/json"
	"fmt"

	"github.com/spf13/cobra"
)

const inspectLong = `Inspect reads each lock NAME and shows:

  kind      lock (a hash in Redisson's RLock layout), not_found (no key: the lock is free),
            or other (a key of another type, or a hash that is not an RLock, such as a
            Redisson read/write lock)
  holders   one line per hash field "<client-uuid>:<owner-id>": the client id (one random
            UUID per Redisson client or rlock.Client), the owner id (a Java thread id, or a
            goredisson owner minted by rlock.NewOwner) and the hold count (re-entries)
  runtime   java or unknown. Redisson and goredisson write the same field, and both owner
            ids are small positive integers counted per process, so a holder is "unknown"
            unless something only Java writes is there (a read/write lock's "mode" field;
            an RFairLock queue is reported as a note). It is a heuristic, never a proof.
  ttl       the remaining lease (PTTL). A watchdog keeps it between 20 s and 30 s by
            default while its holder lives.
  waiters   clients subscribed to "redisson_lock__channel:{NAME}": PUBSUB NUMSUB (classic)
            and PUBSUB SHARDNUMSUB (sharded, Redis 7+). A client holds one subscription per
            lock however many of its threads or goroutines wait, so this counts waiting
            clients, not waiting threads. In a Redis Cluster the classic count is the one of
            the node asked, and a goredisson client that listens both ways (its default
            when it cannot know how Java services listen) is counted in each.

Inspect only reads. The lock's type, TTL and fields are read at one moment, by a read-only
Lua script (EVAL of TYPE, PTTL, HGETALL: an ACL user needs EVAL); the fair-lock keys
(EXISTS) and the subscriber counts (PUBSUB) a moment later.

--json prints one object, {"locks": [...]}, with one element per NAME, in order. Field
names are stable:

  name          the NAME given
  kind          "lock", "not_found" or "other"
  redis_type    Redis TYPE: "hash", "none", "string", ...
  variant       omitted, or "redisson_fair_lock" / "redisson_read_write_lock"
  ttl_ms        remaining TTL in ms, -1 when the key has no TTL, null when there is no key
  holders       array (empty when none) of objects:
                  field         the raw hash field, "<client-uuid>:<owner-id>"
                  client_id     the UUID part
                  owner_id      the owner part, as a decimal string
                  hold_count    integer
                  runtime       "java" or "unknown"
                  runtime_hint  why, in words
  channel       the unlock channel, "redisson_lock__channel:{NAME}"
  subscribers   {"classic": n, "sharded": n or null when the server lacks sharded pub/sub}
  notes         array of strings (empty when none)

Exit code 3 when any NAME is not a lock (not_found or other); all NAMEs are still printed.` + inspectGroupHelp

func (a *app) inspectCommand() *cobra.Command {
	var asJSON, group bool
	var servers string
	cmd := &cobra.Command{
		Use:   "inspect NAME...",
		Short: "Show who holds a lock, its hold counts, TTL and waiting clients",
		Long:  inspectLong,
		Example: `  # One lock, on the Redis of REDIS_URL (or 127.0.0.1:6379)
  goredisson inspect lock:stock:42

  # Several locks on a given server; exit code 3 if one of them is not held
  goredisson --redis 127.0.0.1:6379 inspect order:1 order:2 || echo "one is free"

  # Client ids of the holders, for a script
  goredisson inspect --json lock:stock:42 | jq -r '.locks[].holders[].client_id'

  # Same lock seen from Java: Redisson's getLock("lock:stock:42") is the same key

  # A RedLock: one name on five servers
  goredisson inspect --servers 10.0.0.1:6379,10.0.0.2:6379,10.0.0.3:6379,10.0.0.4:6379,10.0.0.5:6379 res

  # A MultiLock over two names on two servers
  goredisson inspect --group order:1@10.0.0.1:6379 stock:7@10.0.0.2:6379`,
		Args: usageArgs(cobra.MinimumNArgs(1)),
		RunE: func(cmd *cobra.Command, names []string) error {
			for _, name := range names {
				if name == "" {
					return usagef("empty lock name")
				}
			}
			if group || servers != "" {
				ctx, cancel := a.stepContext(cmd.Context())
				defer cancel()
				return a.inspectGroup(ctx, a.stdout, names, servers, asJSON)
			}
			t, _, err := a.target(defaultRedis)
			if err != nil {
				return err
			}
			ctx, cancel := a.stepContext(cmd.Context())
			defer cancel()
			rc, err := a.connect(ctx, t)
			if err != nil {
				return err
			}
			defer rc.Close()
			states := make([]*lockState, 0, len(names))
			for _, name := range names {
				st, err := readLock(ctx, rc, name)
				if err != nil {
					return err
				}
				states = append(states, st)
			}
			if asJSON {
				enc := json.NewEncoder(a.stdout)
				enc.SetIndent("", "  ")
				if err := enc.Encode(struct {
					Locks []*lockState `json:"locks"`
				}{states}); err != nil {
					return err
				}
			} else {
				for i, st := range states {
					if i > 0 {
						fmt.Fprintln(a.stdout)
					}
					fmt.Fprint(a.stdout, st.text())
				}
			}
			for _, st := range states {
				if !st.isLock() {
					return silent(exitNotFound)
				}
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON (field names documented above) instead of text")
	cmd.Flags().BoolVar(&group, "group", false, "the NAMEs (NAME or NAME@HOST:PORT) are the locks of one group (MultiLock, RedLock)")
	cmd.Flags().StringVar(&servers, "servers", "", "comma-separated HOST:PORT list: each NAME on every one of them, as one group (implies --group)")
	return cmd
}
