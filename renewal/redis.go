package renewal

import (
	"context"
	"strconv"
	"time"

	"github.com/redis/rueidis"

	"github.com/goredisson/goredisson/lua"
)

// New returns a running Wheel that renews locks through client with the lua.Renew script.
// The Wheel never closes client. It returns ErrInvalidOptions for a negative option.
func New(client rueidis.Client, opts Options) (*Wheel, error) {
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	w := newWheel(opts, func(ctx context.Context, lease time.Duration, chunks [][]item) []chunkResult {
		return renewChunks(ctx, client, lease, chunks)
	})
	go w.run()
	return w, nil
}

// renewChunks sends every chunk as one Renew call, all pipelined in one round trip.
func renewChunks(ctx context.Context, client rueidis.Client, lease time.Duration, chunks [][]item) []chunkResult {
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
	replies := lua.Renew.ExecMulti(ctx, client, execs...)
	out := make([]chunkResult, len(chunks))
	for i, r := range replies {
		vals, err := r.AsIntSlice()
		if err == nil && len(vals) != len(chunks[i]) {
			err = errShortReply
		}
		out[i] = chunkResult{renewed: vals, err: err}
	}
	return out
}
