package bench

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/redis/rueidis"
	"github.com/stretchr/testify/require"

	"github.com/goredisson/goredisson/internal/keys"
	"github.com/goredisson/goredisson/internal/redistest"
)

// rawGroupProc is the handoff floor of a group lock: rlock's own scripts and Redisson's
// wake-ups with nothing else. A process subscribes to the first server's lock channel once,
// for good; to acquire, it runs the acquire script on the first server and, when it gets it,
// on the other servers at once, waiting for every one (a MultiLock's rule); when the first
// server's lock is held, it waits for a message on the channel and tries again. It keeps no
// hold table, no watchdog, no per-call context; a later server still held (its last
// holder's release on its way) is tried again at once.
type rawGroupProc struct {
	rcs     []rueidis.Client // one per server, connections named after the process
	name    string
	field   string
	channel string
	wake    chan struct{} // a message on the channel since the last drain
	latches atomic.Int64
}

func newRawGroupProc(t testing.TB, srvs []*redistest.Server, name, procName string) groupProc {
	p := &rawGroupProc{name: name, field: uuid.NewString() + ":1", channel: keys.LockChannel(name), wake: make(chan struct{}, 1)}
	for _, srv := range srvs {
		p.rcs = append(p.rcs, namedClient(t, srv, procName))
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() {
		rc := p.rcs[0]
		_ = rc.Receive(ctx, rc.B().Subscribe().Channel(p.channel).Build(), func(rueidis.PubSubMessage) {
			select {
			case p.wake <- struct{}{}:
			default:
			}
		})
	})
	t.Cleanup(func() { cancel(); wg.Wait() })
	_, err := poll(ctx, time.Millisecond, func() (bool, error) { // Receive returns only when it ends
		conns, err := clientList(p.rcs[0])
		for _, cc := range conns {
			if cc.Name == procName && cc.Sub > 0 {
				return true, nil
			}
		}
		return false, err
	})
	require.NoError(t, err)
	return p
}

func (p *rawGroupProc) lock(ctx context.Context) (func() error, error) {
	for {
		select { // a message from before this attempt wakes nothing
		case <-p.wake:
		default:
		}
		ok, err := rawAcquire(ctx, p.rcs[0], p.name, p.field)
		if err != nil {
			return nil, err
		}
		if ok {
			break
		}
		select {
		case <-p.wake:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	errs := make([]error, len(p.rcs))
	var wg sync.WaitGroup
	for i := 1; i < len(p.rcs); i++ {
		wg.Go(func() {
			for { // held only while the last holder's release there is on its way: try again
				ok, err := rawAcquire(ctx, p.rcs[i], p.name, p.field)
				if err != nil || ok {
					errs[i] = err
					return
				}
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return p.release, nil
}

// release runs the release script on every server at once, each publishing on its channel.
func (p *rawGroupProc) release() error {
	req := fmt.Sprintf("raw-%d", p.latches.Add(1))
	errs := make([]error, len(p.rcs))
	var wg sync.WaitGroup
	for i, rc := range p.rcs {
		wg.Go(func() { errs[i] = rawRelease(context.Background(), rc, p.name, p.channel, p.field, req) })
	}
	wg.Wait()
	return errors.Join(errs...)
}

func (p *rawGroupProc) failed() int64 { return 0 }
