package main

import (
	"encoding/json"
	"fmt"

	"github.com/spf13/cobra"
)

const inspectLong = `Inspect reads each lock NAME and shows:

  kind      lock (a hash in Redisson's RLock layout), read_write_lock (a hash in Redisson's
            RReadWriteLock layout, from Java's getReadWriteLock or goredisson's
            NewReadWriteLock: its mode, its readers and its writer), not_found (no key: the
            lock is free), a synchronizer (below), or other (a key of another type, or a hash
            that is not a lock)
  holders   one line per hash field "<client-uuid>:<owner-id>": the client id (one random
            UUID per Redisson client or rlock.Client), the owner id (a Java thread id, or a
            goredisson owner minted by rlock.NewOwner) and the hold count (re-entries)
  runtime   go, with the address it connects from, when a connection is named
            "goredisson:<client id>" (rlock.New names the connection its calls share, where
            the ACL allows CLIENT SETNAME); otherwise unknown, and why: a Java Redisson
            client (unnamed unless it sets clientName), or a Go client whose connection is
            unnamed or gone. Redisson and goredisson write the same field, so the field alone
            cannot tell. Needs CLIENT LIST.
  ttl       the remaining lease (PTTL). A watchdog keeps it between 20 s and 30 s by
            default while its holder lives.
  mode      read-write locks: "read" or "write". Each reader line shows the remaining TTL
            of its timeout keys "{NAME}:<field>:rwlock_timeout:<k>", one per acquisition: a
            read release keeps the lock only while some reader's timeout key lives.
  waiters   clients subscribed to "redisson_lock__channel:{NAME}" (a read-write lock's:
            "redisson_rwlock:{NAME}"): PUBSUB NUMSUB (classic)
            and PUBSUB SHARDNUMSUB (sharded, Redis 7+). A client holds one subscription per
            lock however many of its threads or goroutines wait, so this counts waiting
            clients, not waiting threads. In a Redis Cluster the classic count is the one of
            the node asked, and a goredisson client that listens both ways (its default
            when it cannot know how Java services listen) is counted in each. A fair
            lock's waiters listen on channels of their own (see queue), not here.
  queue     a fair lock's waiters (Redisson's RFairLock, goredisson's NewFairLock), first
            first: each waiter's field, and its deadline (epoch ms, from
            "redisson_lock_timeout:{NAME}") with the time left on the server's clock. A
            waiter past its deadline died without leaving; the next script on the lock
            drops it once it is first. Shown for a free lock too (waiters between two
            holders, or dead ones).

Inspect also recognises Redisson's synchronizers (and goredisson's counterparts):

  countdown_latch      an integer string whose waiters listen on
                       "redisson_countdownlatch__channel__{NAME}": count is the latch's count
  semaphore            an integer string whose waiters listen on "redisson_sc:{NAME}": count
                       is the available permits
  latch_or_semaphore   an integer string nobody waits on: either of the two (Redis alone
                       cannot tell them apart)
  expirable_semaphore  a permit-expirable semaphore with permits held in the sorted set
                       "{NAME}:timeout": count is the available permits, and each held
                       permit is shown with its id (32 hex digits, as Java and goredisson
                       show it) and remaining lease (by this machine's clock). A permit whose
                       lease ran out is shown as expired until a client reclaims it. One with
                       no permit held looks like a semaphore.

Inspect only reads. The lock's type, TTL and fields are read at one moment, by a read-only
Lua script (EVAL of TYPE, PTTL, HGETALL: an ACL user needs EVAL); the fair lock's queue
and deadlines (another read-only script: LRANGE, ZSCORE, TIME; then ZCARD) and the
subscriber counts (PUBSUB) a moment later.

--json prints one object, {"locks": [...]}, with one element per NAME, in order. Field
names are stable:

  name          the NAME given
  kind          "lock", "read_write_lock", "not_found", "other", or a synchronizer's kind (above)
  redis_type    Redis TYPE: "hash", "none", "string", ...
  variant       omitted, or "redisson_fair_lock" / "redisson_read_write_lock"
  mode          read-write locks only: "read" or "write"
  ttl_ms        remaining TTL in ms, -1 when the key has no TTL, null when there is no key
  holders       array (empty when none) of objects:
                  field         the raw hash field, "<client-uuid>:<owner-id>"
                  client_id     the UUID part
                  owner_id      the owner part, as a decimal string
                  hold_count    integer
                  runtime       "go" or "unknown"
                  runtime_hint  why, in words
                  address       a Go holder's address (CLIENT LIST)
                  connection_name  its connection's name, "goredisson:<client id>"
                  role          read-write locks only: "reader" or "writer"
                  read_timeouts_ms  readers only: PTTL of each timeout key, 1..hold count
  channel       the unlock channel, "redisson_lock__channel:{NAME}" (read-write locks:
                "redisson_rwlock:{NAME}")
  subscribers   {"classic": n, "sharded": n or null when the server lacks sharded pub/sub}
  queue         omitted unless the fair lock's queue or timeout set exists; else an array,
                first waiter first, of objects:
                  position        1 for the next waiter
                  field, client_id, owner_id   as for holders
                  deadline_ms     epoch ms, null when the timeout set has no score for it
                  deadline_in_ms  deadline_ms less the server's time (negative: passed)
                  channel         the waiter's own channel, "redisson_lock__channel:{NAME}:<field>"
  notes         array of strings (empty when none)
  count         synchronizers only: the latch's count or the available permits (omitted
                when there is no key)
  permits       expirable semaphores only: array of {"id", "lease_ms" (-1: never expires),
                "expired"}

Exit code 3 when any NAME is neither a lock nor a synchronizer (not_found or other); all
NAMEs are still printed.` + inspectGroupHelp

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
				if !st.found() {
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
