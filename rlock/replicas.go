package rlock

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/rueidis"

	"github.com/goredisson/goredisson/internal/backoff"
	"github.com/goredisson/goredisson/internal/keys"
	"github.com/goredisson/goredisson/lua"
	"github.com/goredisson/goredisson/renewal"
)

// Replica sync tuning (see ReplicaSyncMode).
const (
	// replicaCountMaxAge is how long a master's connected replica count is used before it
	// is read again; a WAIT that reports another number drops it at once.
	replicaCountMaxAge = 10 * time.Second
	// replicaSyncTries is how many times an acquire or an unlock whose write no replica
	// confirmed is tried in all.
	replicaSyncTries = 3
	// replicaSyncRetryDelay is the pause before the second try; it doubles for the next.
	replicaSyncRetryDelay = 100 * time.Millisecond
	// movedWait bounds how long a call that got MOVED waits for the cluster client to send
	// it to the new master; rueidis refreshes its slot map within a second of a redirect
	// for clusters of fewer than 100 nodes.
	movedWait = 2 * time.Second
)

// errUnconfirmed is what a synced call returns when it wrote on a master with replicas and
// none of them confirmed the write within ReplicaSyncTimeout.
var errUnconfirmed = errors.New("rlock: no replica confirmed the write in time")

// replicaSync makes lock writes wait for the master's replicas (Options.ReplicaSync). A
// write runs on a dedicated connection to the master of its key and is followed there by
// WAIT <connected replicas> <ReplicaSyncTimeout>: WAIT covers the writes of its own
// connection, and in a cluster a dedicated connection goes to the master of its first
// command's slot, which WAIT (no key) then shares.
//
// The connected replica count of each master (of each hash slot in a cluster) comes from
// INFO replication, pipelined after the script of a call that finds no fresh count, and is
// kept for replicaCountMaxAge, until a WAIT reports another number, or until a script call
// fails (a redirect, READONLY, a lost connection: a failover may have moved the slot to a
// master with other replicas). Replies to INFO and WAIT after a failed script are ignored. While a master is known to have no replica its calls take the shared
// connection without WAIT, as with sync off, so a deployment without replicas never waits.
type replicaSync struct {
	rc        rueidis.Client
	timeoutMs int64
	cluster   bool
	log       *slog.Logger
	counts    []atomic.Pointer[replicaCount] // by hash slot in a cluster, else one
	epoch     atomic.Uint64                  // bumped by every sign of a topology change
	turns     chan struct{}                  // one token per call holding a dedicated connection

	batchersMu sync.Mutex
	batchers   map[string]*batcher // by master address ("" outside a cluster)
	slotsMu    sync.Mutex
	reading    chan struct{} // closed when the read of the slot map under way ends; guarded by slotsMu
	slots      atomic.Pointer[slotMap]
	sending    sync.WaitGroup // the goroutines that send batches which arrived during another
}

// errNoTurn is the error of a synced call whose turn for a dedicated connection did not
// come before its context ended: nothing was sent.
var errNoTurn = errors.New("rlock: no connection to the master free in time (replica sync)")

// noTurn is errNoTurn for a call whose ctx ended, with ctx's error.
func noTurn(ctx context.Context) error { return fmt.Errorf("%w (%v)", errNoTurn, ctx.Err()) }

// maxDedicated is how many calls of one Client hold dedicated connections at once.
const maxDedicated = 64

// replicaCount is a master's connected replica count, when it was read, and the topology
// epoch it was read in.
type replicaCount struct {
	n     int64
	at    time.Time
	epoch uint64
}

// newReplicaSync returns the replica sync of a client with options opts, or nil when sync
// is off for rc's topology.
func newReplicaSync(rc rueidis.Client, opts Options) *replicaSync {
	cluster := rc.Mode() == rueidis.ClientModeCluster
	switch opts.ReplicaSync {
	case ReplicaSyncOff:
		return nil
	case ReplicaSyncAuto:
		if !cluster && rc.Mode() != rueidis.ClientModeSentinel {
			return nil
		}
	}
	n := 1
	if cluster {
		n = keys.SlotCount
	}
	log := opts.Logger
	if log == nil {
		log = discard
	}
	return &replicaSync{
		rc:        rc,
		timeoutMs: opts.ReplicaSyncTimeout.Milliseconds(),
		cluster:   cluster,
		log:       log,
		counts:    make([]atomic.Pointer[replicaCount], n),
		turns:     make(chan struct{}, maxDedicated),
		batchers:  map[string]*batcher{},
	}
}

// renewalSync returns the wheel's Sync function: nil when r is nil (sync off).
func (r *replicaSync) renewalSync() renewal.SyncFunc {
	if r == nil {
		return nil
	}
	return r.execMulti
}

// exec runs s once with keys and args on the master of keys[0] and waits for its replicas;
// see syncedConn.exec. While the master may have replicas the call goes in the master's
// next batch (see batched); it is made on its own when the master is not known, or when
// the batch found that the key's slot moved.
func (r *replicaSync) exec(ctx context.Context, s lua.Script, keys, args []string) (res rueidis.RedisResult, err error) {
	if res, err, ok := r.tryBatched(ctx, keys[0], lua.Call{Script: s, Keys: keys, Args: args}); ok {
		return res[0], err
	}
	if werr := r.with(ctx, keys[0], true, func(c *syncedConn) rueidis.RedisResult {
		res, err = c.exec(ctx, s, keys, args)
		return res
	}); werr != nil {
		return res, werr
	}
	return res, err
}

// execMulti runs s once per exec, all on the master of key over one connection, and waits
// for its replicas; see syncedConn.execMulti. It is the renewal wheel's Sync function.
func (r *replicaSync) execMulti(ctx context.Context, s lua.Script, key string, execs []rueidis.LuaExec) (res []rueidis.RedisResult, err error) {
	if res, err, ok := r.tryBatched(ctx, key, s.Calls(execs...)...); ok {
		return res, err
	}
	if werr := r.with(ctx, key, false, func(c *syncedConn) rueidis.RedisResult {
		res, err = c.execMulti(ctx, s, execs)
		return res[0]
	}); werr != nil {
		return nil, werr
	}
	return res, err
}

// tryBatched runs calls in the next batch of the master of key (see batched) while that
// master may have replicas. ok is false when the calls are to be made on their own: the
// master has none, is not known, or a call found its slot moved or its master gone (the
// calls are then made again, which the scripts sent together allow: renewals, or one
// call that did not run).
func (r *replicaSync) tryBatched(ctx context.Context, key string, calls ...lua.Call) (res []rueidis.RedisResult, err error, ok bool) {
	if n, fresh := r.count(r.slotOf(key)); fresh && n == 0 {
		return nil, nil, false
	}
	if res, err, ok = r.batched(ctx, key, calls...); !ok {
		return nil, nil, false
	}
	for _, rr := range res {
		if _, redirected := redirect(rr); redirected || errors.Is(rr.Error(), errMasterGone) {
			return nil, nil, false
		}
	}
	return res, err, true
}

// with calls fn with a connection to the master of key: the shared client while that
// master is known to have no replica, else a dedicated connection held until fn returns.
// fn returns the reply of its last script call. A script call that failed, the sign of a
// topology change (a redirect, READONLY, a lost connection), makes every cached count
// stale.
//
// In a cluster a dedicated connection does not follow redirects, and goes to the node
// that the client's slot map names. After a MOVED reply (the script did not run) fn runs
// again on a new dedicated connection, with pauses, until the client's refresh of its slot
// map, which the reply started, sends it to the new master, for at most movedWait. After
// an ASK reply (a slot being migrated), or when that wait ends, fn runs again on the shared
// client, which follows redirects, without WAIT.
//
// With turns, at most maxDedicated such calls of a client hold dedicated connections at
// once (rueidis opens one per concurrent call, up to its BlockingPoolSize per node, each
// with its own buffers): the others wait for a turn, and with returns errNoTurn, without
// calling fn, when ctx ends first. The watchdog's calls take no turn, so that acquires never
// starve renewals (the wheel bounds its own calls, syncParallel at a time).
func (r *replicaSync) with(ctx context.Context, key string, turns bool, fn func(c *syncedConn) rueidis.RedisResult) error {
	c := syncedConn{r: r, slot: r.slotOf(key)}
	var last rueidis.RedisResult
	if n, fresh := r.count(c.slot); fresh && n == 0 {
		last = fn(&c)
	} else {
		if turns {
			select {
			case r.turns <- struct{}{}:
			case <-ctx.Done():
				return noTurn(ctx)
			}
			defer func() { <-r.turns }()
		}
		last = r.dedicated(&c, fn)
	}
	if failed(last) {
		r.epoch.Add(1)
	}
	moved, redirected := redirect(last)
	if !redirected || c.dc == nil {
		return nil
	}
	if moved {
		retry := backoff.New(10*time.Millisecond, 200*time.Millisecond)
		for end := time.Now().Add(movedWait); time.Now().Before(end) && retry.Wait(ctx); {
			if moved, _ = redirect(r.dedicated(&c, fn)); !moved {
				return nil
			}
		}
	}
	c.dc = nil
	fn(&c)
	return nil
}

// dedicated runs fn with c on a dedicated connection and returns fn's reply.
func (r *replicaSync) dedicated(c *syncedConn, fn func(c *syncedConn) rueidis.RedisResult) (last rueidis.RedisResult) {
	r.rc.Dedicated(func(dc rueidis.DedicatedClient) error {
		c.dc = dc
		last = fn(c)
		return nil
	})
	return last
}

// failed reports whether a script call got an error: a Redis error reply (none of the lock
// scripts replies one when it runs: READONLY, MOVED, CLUSTERDOWN... come from a topology
// change), or no reply. A nil reply is not an error.
func failed(res rueidis.RedisResult) bool {
	err := res.Error()
	return err != nil && !rueidis.IsRedisNil(err)
}

// allFailed reports whether every script call of res failed: then none wrote, and the
// node may not be the master of their keys.
func allFailed(res []rueidis.RedisResult) bool {
	for _, r := range res {
		if !failed(r) {
			return false
		}
	}
	return true
}

// redirect reports whether res is a cluster redirect, and whether it is MOVED.
func redirect(res rueidis.RedisResult) (moved, redirected bool) {
	rerr, ok := rueidis.IsRedisErr(res.Error())
	if !ok {
		return false, false
	}
	if _, moved = rerr.IsMoved(); moved {
		return true, true
	}
	_, ask := rerr.IsAsk()
	return false, ask
}

// count returns the cached replica count of the master of slot, and whether it is fresh:
// read less than replicaCountMaxAge ago, and since the last topology change seen.
func (r *replicaSync) count(slot uint16) (int64, bool) {
	e := r.counts[slot].Load()
	if e == nil || e.epoch != r.epoch.Load() || time.Since(e.at) > replicaCountMaxAge {
		return 0, false
	}
	return e.n, true
}

func (r *replicaSync) store(slot uint16, n int64) {
	r.counts[slot].Store(&replicaCount{n: n, at: time.Now(), epoch: r.epoch.Load()})
}

// learn records the replica count of the master of slot from its INFO replication reply.
// A server that refuses INFO is treated as a master without replicas until the count is
// read again.
func (r *replicaSync) learn(slot uint16, info rueidis.RedisResult) (int64, error) {
	text, err := info.ToString()
	if err != nil {
		if r.refused(slot, "INFO", err) {
			return 0, nil
		}
		return 0, fmt.Errorf("%w (INFO: %w)", errUnconfirmed, err)
	}
	n := connectedReplicas(text)
	r.store(slot, n)
	return n, nil
}

// waited checks the reply of WAIT want on the master of slot: nil when at least one
// replica confirmed, errUnconfirmed when none did. A count other than want drops the
// cached one. A server that refuses WAIT is treated as a master without replicas until
// the count is read again, as Redisson does when WAIT is not supported.
func (r *replicaSync) waited(slot uint16, want int64, reply rueidis.RedisResult) error {
	got, err := reply.AsInt64()
	switch {
	case err == nil:
		if got != want {
			r.counts[slot].Store(nil)
		}
		if got == 0 {
			return errUnconfirmed
		}
		return nil
	case r.refused(slot, "WAIT", err):
		return nil
	}
	r.counts[slot].Store(nil)
	return fmt.Errorf("%w (WAIT: %w)", errUnconfirmed, err)
}

// refused reports whether err is the server's refusal of cmd (a Redis error reply); if so
// the master of slot is recorded without replicas and a warning is logged.
func (r *replicaSync) refused(slot uint16, cmd string, err error) bool {
	if _, isRedis := rueidis.IsRedisErr(err); !isRedis {
		return false
	}
	r.store(slot, 0)
	r.log.Warn("rlock: the server refuses "+cmd+"; lock writes on this master are not waited for on replicas",
		"slot", slot, "error", err, "retry_after", replicaCountMaxAge)
	return true
}

// connectedReplicas returns the connected_slaves field of an INFO replication reply, 0
// when it has none.
func connectedReplicas(info string) int64 {
	_, rest, ok := strings.Cut(info, "connected_slaves:")
	if !ok {
		return 0
	}
	line, _, _ := strings.Cut(rest, "\r\n")
	n, err := strconv.ParseInt(strings.TrimSpace(line), 10, 64)
	if err != nil {
		return 0
	}
	return n
}

// syncedConn is the connection of one operation on one master (see replicaSync.with).
type syncedConn struct {
	r    *replicaSync
	dc   rueidis.DedicatedClient // nil: the shared client, the master having no replica
	slot uint16                  // the cache entry: the key's hash slot in a cluster, else 0
}

// exec runs s once with keys and args, then WAIT for the master's replicas on the same
// connection. It returns the script's reply, and nil when a replica confirmed the
// connection's writes or the master has none, errUnconfirmed (possibly wrapping the WAIT's
// own error) otherwise; a script call that failed is returned with a nil error, as there
// is nothing to wait for. WAIT is sent whatever the script did: after a script that wrote
// nothing it returns at once.
func (c *syncedConn) exec(ctx context.Context, s lua.Script, keys, args []string) (rueidis.RedisResult, error) {
	res, err := c.do(ctx, func(cc rueidis.CommandClient, then func() rueidis.Commands) ([]rueidis.RedisResult, []rueidis.RedisResult) {
		if then == nil {
			return []rueidis.RedisResult{s.Exec(ctx, cc, keys, args)}, nil
		}
		rs := s.ExecThen(ctx, cc, keys, args, then)
		return rs[:1], rs[1:]
	})
	return res[0], err
}

// execMulti runs s once per exec, pipelined, then WAIT on the same connection; the replies
// are one per exec, the error as exec's.
func (c *syncedConn) execMulti(ctx context.Context, s lua.Script, execs []rueidis.LuaExec) ([]rueidis.RedisResult, error) {
	if len(execs) == 1 {
		res, err := c.exec(ctx, s, execs[0].Keys, execs[0].Args)
		return []rueidis.RedisResult{res}, err
	}
	return c.do(ctx, func(cc rueidis.CommandClient, then func() rueidis.Commands) ([]rueidis.RedisResult, []rueidis.RedisResult) {
		res := s.ExecMulti(ctx, cc, execs...)
		if then == nil {
			return res, nil
		}
		return res, cc.DoMulti(ctx, then()...)
	})
}

// do runs the script calls of run on c's connection, with the commands that then builds
// sent right after them on that connection (run is given a nil then when nothing follows).
// With a fresh replica count, WAIT follows the scripts in the same round trip (and when it
// reports no replica, INFO replication tells whether any is still connected); without
// one, INFO replication does, and WAIT is sent next when INFO shows replicas.
func (c *syncedConn) do(ctx context.Context, run func(cc rueidis.CommandClient, then func() rueidis.Commands) (res, after []rueidis.RedisResult)) ([]rueidis.RedisResult, error) {
	if c.dc == nil {
		res, _ := run(c.r.rc, nil)
		return res, nil
	}
	want, fresh := c.r.count(c.slot)
	switch {
	case fresh && want == 0:
		res, _ := run(c.dc, nil)
		return res, nil
	case fresh:
		res, after := run(c.dc, func() rueidis.Commands { return rueidis.Commands{c.wait(want)} })
		if allFailed(res) {
			return res, nil // the script wrote nothing, and this node may not be the master
		}
		err := c.r.waited(c.slot, want, after[0])
		if err == errUnconfirmed {
			// The cached count may be out of date, as after a failover to a master without
			// replicas: with none connected now there is nothing to wait for.
			if n, ierr := c.r.learn(c.slot, c.dc.Do(ctx, c.info())); ierr == nil && n == 0 {
				return res, nil
			}
		}
		return res, err
	}
	res, after := run(c.dc, func() rueidis.Commands { return rueidis.Commands{c.info()} })
	if allFailed(res) {
		return res, nil
	}
	want, err := c.r.learn(c.slot, after[0])
	if err != nil || want == 0 {
		return res, err
	}
	return res, c.r.waited(c.slot, want, c.dc.Do(ctx, c.wait(want)))
}

// info builds INFO replication.
func (c *syncedConn) info() rueidis.Completed {
	return c.dc.B().Info().Section("replication").Build()
}

// wait builds WAIT want <ReplicaSyncTimeout>.
func (c *syncedConn) wait(want int64) rueidis.Completed {
	return c.dc.B().Wait().Numreplicas(want).Timeout(c.r.timeoutMs).Build()
}

// retryUnconfirmed runs try until its write is confirmed or it gives a final answer: a try
// that returns errUnconfirmed (its write was given back) is run again after a pause,
// replicaSyncTries tries in all, and then the result is ErrNotReplicated.
func retryUnconfirmed[T any](ctx context.Context, try func() (T, error)) (T, error) {
	var zero T
	var retry *backoff.Backoff
	for tries := 1; ; tries++ {
		v, err := try()
		switch {
		case !errors.Is(err, errUnconfirmed):
			return v, err
		case tries == replicaSyncTries:
			return zero, ErrNotReplicated
		}
		if retry == nil {
			retry = newSyncRetry()
		}
		if !retry.Wait(ctx) {
			return zero, ctx.Err()
		}
	}
}

// newSyncRetry returns the pauses between the tries of a write no replica confirmed.
func newSyncRetry() *backoff.Backoff {
	return backoff.New(replicaSyncRetryDelay, 4*replicaSyncRetryDelay)
}
