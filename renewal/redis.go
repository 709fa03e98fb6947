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

// New returns a running Wheel that renews locks through client with the lua.Renew script,
// and read holds of read-write locks with lua.RenewRead.
// The Wheel never closes client. It returns ErrInvalidOptions for a negative option.
func New(client rueidis.Client, opts Options) (*Wheel, error) {
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	w := newWheel(opts, func(ctx context.Context, lease time.Duration, chunks [][]item) []chunkResult {
		read := lua.RenewRead
		if opts.AllReaders {
			read = lua.RenewReadAll
		}
		if opts.Sync != nil {
			return renewSynced(ctx, opts.Sync, opts.Cluster, read, lease, chunks)
		}
		return renewChunks(ctx, client, read, lease, chunks)
	})
	go w.run()
	return w, nil
}

// renewChunks sends every chunk as one renewal call, all pipelined in one round trip (two
// when there are read holds and others: one per script, read for the read holds).
func renewChunks(ctx context.Context, client rueidis.Client, read lua.Script, lease time.Duration, chunks [][]item) []chunkResult {
	execs := renewExecs(lease, chunks)
	out := make([]chunkResult, len(chunks))
	split := readStart(chunks) // chunk reads the lock holds first
	for i, r := range lua.Renew.ExecMulti(ctx, client, execs[:split]...) {
		out[i] = chunkReply(r, len(chunks[i]), nil)
	}
	if split < len(chunks) {
		for i, r := range read.ExecMulti(ctx, client, execs[split:]...) {
			out[split+i] = chunkReply(r, len(chunks[split+i]), nil)
		}
	}
	return out
}

// readStart returns the index of the first chunk of read holds, len(chunks) when none.
func readStart(chunks [][]item) int {
	for i, c := range chunks {
		if c[0].e.read {
			return i
		}
	}
	return len(chunks)
}

// script returns the renewal script of a chunk: read for read holds.
func script(c []item, read lua.Script) lua.Script {
	if c[0].e.read {
		return read
	}
	return lua.Renew
}

// renewSynced sends the chunks through syncFn: all of them in one call outside a cluster,
// the chunks of each hash slot in one call in a cluster (one per script: read holds have
// their own), at most syncParallel calls at a time. A call that syncFn reports unconfirmed
// fails for all its chunks.
func renewSynced(ctx context.Context, syncFn SyncFunc, cluster bool, read lua.Script, lease time.Duration, chunks [][]item) []chunkResult {
	execs := renewExecs(lease, chunks)
	out := make([]chunkResult, len(chunks))
	sem := make(chan struct{}, syncParallel)
	var wg sync.WaitGroup
	for start := 0; start < len(chunks); {
		same := func(c []item) bool {
			first := chunks[start][0].e
			return c[0].e.read == first.read && (!cluster || keys.Slot(c[0].e.name) == keys.Slot(first.name))
		}
		end := start + 1
		for end < len(chunks) && same(chunks[end]) {
			end++
		}
		first, group := start, chunks[start:end]
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			replies, err := syncFn(ctx, script(group[0], read), group[0][0].e.name, execs[first:first+len(group)])
			for i := range group {
				switch {
				case i < len(replies):
					out[first+i] = chunkReply(replies[i], len(group[i]), err)
				case err != nil:
					out[first+i] = chunkResult{err: err} // the call was not made
				default:
					out[first+i] = chunkResult{err: errShortReply}
				}
			}
		})
		start = end
	}
	wg.Wait()
	return out
}

// renewExecs returns one renewal call per chunk: KEYS the chunk's names (each followed by
// its timeout keys' prefix for read holds, lua.RenewRead), ARGV the lease and the holders'
// fields.
func renewExecs(lease time.Duration, chunks [][]item) []rueidis.LuaExec {
	leaseMs := strconv.FormatInt(lease.Milliseconds(), 10)
	execs := make([]rueidis.LuaExec, len(chunks))
	for i, c := range chunks {
		ks := make([]string, 0, 2*len(c))
		args := make([]string, len(c)+1)
		args[0] = leaseMs
		for j, it := range c {
			ks = append(ks, it.e.name)
			if it.e.read {
				ks = append(ks, keys.Tagged(it.e.name))
			}
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
