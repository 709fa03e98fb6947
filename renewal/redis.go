package renewal

import (
	"context"
	"strconv"
	"sync"
	"time"

	"github.com/redis/rueidis"

	"github.com/goredisson/goredisson/internal/keys"
	"github.com/goredisson/goredisson/lua"
)

// syncParallel is the most masters (hash slots, in a cluster) renewed at once through
// Options.Sync.
const syncParallel = 16

// New returns a running Wheel that renews locks through client with the lua.Renew script.
// The Wheel never closes client. It returns ErrInvalidOptions for a negative option.
func New(client rueidis.Client, opts Options) (*Wheel, error) {
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	w := newWheel(opts, func(ctx context.Context, lease time.Duration, chunks [][]item) []chunkResult {
		if opts.Sync != nil {
			return renewSynced(ctx, opts.Sync, opts.Cluster, lease, chunks)
		}
		return renewChunks(ctx, client, lease, chunks)
	})
	go w.run()
	return w, nil
}

// renewChunks sends every chunk as one Renew call, all pipelined in one round trip.
func renewChunks(ctx context.Context, client rueidis.Client, lease time.Duration, chunks [][]item) []chunkResult {
	replies := lua.Renew.ExecMulti(ctx, client, renewExecs(lease, chunks)...)
	out := make([]chunkResult, len(chunks))
	for i, r := range replies {
		out[i] = chunkReply(r, len(chunks[i]), nil)
	}
	return out
}

// renewSynced sends the chunks through syncFn: all of them in one call outside a cluster,
// the chunks of each hash slot in one call in a cluster, at most syncParallel calls at a
// time. A call that syncFn reports unconfirmed fails for all its chunks.
func renewSynced(ctx context.Context, syncFn SyncFunc, cluster bool, lease time.Duration, chunks [][]item) []chunkResult {
	execs := renewExecs(lease, chunks)
	out := make([]chunkResult, len(chunks))
	sem := make(chan struct{}, syncParallel)
	var wg sync.WaitGroup
	for start := 0; start < len(chunks); {
		end := len(chunks)
		if cluster {
			slot := keys.Slot(chunks[start][0].e.name)
			for end = start + 1; end < len(chunks) && keys.Slot(chunks[end][0].e.name) == slot; end++ {
			}
		}
		first, group := start, chunks[start:end]
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			replies, err := syncFn(ctx, lua.Renew, group[0][0].e.name, execs[first:first+len(group)])
			for i, r := range replies {
				out[first+i] = chunkReply(r, len(group[i]), err)
			}
		})
		start = end
	}
	wg.Wait()
	return out
}

// renewExecs returns one Renew call per chunk: KEYS the chunk's names, ARGV the lease and
// the holders' fields.
func renewExecs(lease time.Duration, chunks [][]item) []rueidis.LuaExec {
	leaseMs := strconv.FormatInt(lease.Milliseconds(), 10)
	execs := make([]rueidis.LuaExec, len(chunks))
	for i, c := range chunks {
		ks := make([]string, len(c))
		args := make([]string, len(c)+1)
		args[0] = leaseMs
		for j, it := range c {
			ks[j] = it.e.name
			args[j+1] = it.field
		}
		execs[i] = rueidis.LuaExec{Keys: ks, Args: args}
	}
	return execs
}

// chunkReply turns the reply of one Renew call of n locks into its result; unconfirmed,
// when not nil, fails a call that otherwise succeeded.
func chunkReply(r rueidis.RedisResult, n int, unconfirmed error) chunkResult {
	vals, err := r.AsIntSlice()
	switch {
	case err != nil:
		return chunkResult{err: err}
	case len(vals) != n:
		return chunkResult{err: errShortReply}
	case unconfirmed != nil:
		return chunkResult{err: unconfirmed}
	}
	return chunkResult{renewed: vals}
}
