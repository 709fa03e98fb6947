package bench

// The lock libraries TestCompare puts side by side. Every peer is used the way its README
// shows, with each peer's documented single-node settings; the only additions are counters,
// hooked in where the library itself offers a hook (redsync's delay function, bsm's
// RetryStrategy, rueidislock's ClientBuilder), so that a handoff's holder can tell when a
// waiter has made a failed attempt and is now waiting.

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bsm/redislock"
	"github.com/go-redsync/redsync/v4"
	redsyncredis "github.com/go-redsync/redsync/v4/redis"
	redsyncgoredis "github.com/go-redsync/redsync/v4/redis/goredis/v9"
	goredis "github.com/redis/go-redis/v9"
	"github.com/redis/rueidis"
	"github.com/redis/rueidis/rueidislock"
	"github.com/stretchr/testify/require"

	"github.com/goredisson/goredisson/internal/keys"
	"github.com/goredisson/goredisson/internal/redistest"
	"github.com/goredisson/goredisson/internal/redistest/rlocktest"
	"github.com/goredisson/goredisson/rlock"
)

// Lock settings shared by the contenders.
const (
	peerTTL        = 10 * time.Second      // bsm's ttl (redsync keeps its default expiry, 8 s)
	peerRetryDelay = 10 * time.Millisecond // bsm LinearBackoff, redsync WithRetryDelay
)

// proc is one simulated process of a contender: its own Redis client(s) and its own
// instance of the lock library. Several goroutines may use one proc at once.
type proc interface {
	// lock acquires name, blocking until it is free or ctx ends, and returns the function
	// that releases it.
	lock(ctx context.Context, name string) (release func() error, err error)
	// failed counts acquire attempts that found the lock taken (0 where not observable).
	failed() int64
}

// contender is one library in one configuration.
type contender struct {
	name  string // as printed in tables
	short string // as printed on the chart
	// newProc starts a simulated process on srv; id names its Redis connections.
	newProc func(t testing.TB, srv *redistest.Server, id string) proc
	// kind selects how a handoff's holder sees that a waiter waits (see handoffReady).
	kind waitKind
}

type waitKind int

const (
	waitsPolling waitKind = iota // a failed attempt counted by a hook: the waiter now sleeps or waits for a push
	waitsPubSub                  // goredisson: the waiter's client shows sub>=1 in CLIENT LIST
	waitsJava                    // Java Redisson: a new set of subscribed connections (see javaReady)
	waitsQueue                   // a fair lock, Go or Java: its queue (LLEN) holds every waiter
)

// goContenders are the Go libraries, goredisson first.
func goContenders() []*contender {
	return []*contender{
		{name: "goredisson (rlock)", short: "goredisson", newProc: newRlockProc(false), kind: waitsPubSub},
		{name: "redsync v4.18.1, default retry delay (50-250 ms)", short: "redsync\ndefault", newProc: newRedsyncProc(0), kind: waitsPolling},
		{name: "redsync v4.18.1, WithRetryDelay(10ms)", short: "redsync\n10ms", newProc: newRedsyncProc(peerRetryDelay), kind: waitsPolling},
		{name: "bsm/redislock v0.10.0, LinearBackoff(10ms)", short: "bsm\n10ms", newProc: newBsmProc, kind: waitsPolling},
		{name: "rueidislock (rueidis v1.0.79), KeyMajority 1, NoLoopTracking", short: "rueidislock", newProc: newRueidislockProc, kind: waitsPolling},
	}
}

// --- goredisson -------------------------------------------------------------------------------

type rlockProc struct {
	c          *rlock.Client
	cancelable bool
	fair       bool // NewFairLock instead of NewLock
}

// newRlockProc: one rueidis client and one rlock.Client with default options (watchdog
// 30 s). Each lock call mints its own owner. With cancelable, calls without a deadline of
// their own get a cancelable context (the path of a server request's context, see
// BenchmarkUncontendedLockUnlock).
func newRlockProc(cancelable bool) func(testing.TB, *redistest.Server, string) proc {
	return func(t testing.TB, srv *redistest.Server, id string) proc {
		return &rlockProc{c: rlocktest.NewClient(t, namedClient(t, srv, id), rlock.Options{}), cancelable: cancelable}
	}
}

func (p *rlockProc) lock(ctx context.Context, name string) (func() error, error) {
	l := p.c.NewLock(name)
	if p.fair {
		l = p.c.NewFairLock(name)
	}
	lctx := rlock.NewOwner(ctx)
	if p.cancelable {
		var cancel context.CancelFunc
		lctx, cancel = context.WithCancel(lctx)
		defer cancel()
	}
	if err := l.Lock(lctx); err != nil {
		return nil, err
	}
	o, _ := rlock.OwnerFrom(lctx)
	uctx := rlock.WithOwner(context.Background(), o)
	return func() error { return l.Unlock(uctx) }, nil
}

func (p *rlockProc) failed() int64 { return 0 }

// --- redsync ----------------------------------------------------------------------------------

type redsyncProc struct {
	rs    *redsync.Redsync
	opts  []redsync.Option
	fails atomic.Int64
}

// newRedsyncProc: one go-redis v9 client (default pool) behind redsync's goredis pool.
// delay 0 keeps redsync's default delay, rand(50 ms, 250 ms), reproduced verbatim in the
// counting hook; tries are unlimited so that, as for the other contenders, the caller's
// ctx bounds the wait (with the default 32 tries a waiter gives up after about 5 s).
func newRedsyncProc(delay time.Duration) func(testing.TB, *redistest.Server, string) proc {
	return func(t testing.TB, srv *redistest.Server, id string) proc {
		return newRedsyncOver(delay, redsyncgoredis.NewPool(newGoRedis(t, srv)))
	}
}

// newRedsyncOver is a redsyncProc over pools (one per server; a quorum of them makes a lock).
func newRedsyncOver(delay time.Duration, pools ...redsyncredis.Pool) *redsyncProc {
	p := &redsyncProc{rs: redsync.New(pools...)}
	p.opts = []redsync.Option{redsync.WithTries(math.MaxInt32), redsync.WithRetryDelayFunc(func(int) time.Duration {
		p.fails.Add(1) // called after each failed attempt, before the sleep
		if delay > 0 {
			return delay
		}
		return time.Duration(rand.IntN(250-50)+50) * time.Millisecond // redsync's default
	})}
	return p
}

func (p *redsyncProc) lock(ctx context.Context, name string) (func() error, error) {
	m := p.rs.NewMutex(name, p.opts...)
	if err := m.LockContext(ctx); err != nil {
		return nil, err
	}
	return func() error {
		ok, err := m.UnlockContext(context.Background())
		if err == nil && !ok {
			err = errors.New("redsync: unlock returned false")
		}
		return err
	}, nil
}

func (p *redsyncProc) failed() int64 { return p.fails.Load() }

// newGoRedis returns a go-redis v9 client with default options, closed in t.Cleanup.
func newGoRedis(t testing.TB, srv *redistest.Server) *goredis.Client {
	c := goredis.NewClient(&goredis.Options{Addr: srv.Addr})
	require.NoError(t, c.Ping(context.Background()).Err())
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// --- bsm/redislock ------------------------------------------------------------------------------

type bsmProc struct {
	c     *redislock.Client
	retry countingRetry
}

// countingRetry counts NextBackoff calls: bsm calls it after each failed attempt.
type countingRetry struct {
	redislock.RetryStrategy
	n *atomic.Int64
}

func (r countingRetry) NextBackoff() time.Duration {
	r.n.Add(1)
	return r.RetryStrategy.NextBackoff()
}

// newBsmProc: one go-redis v9 client; Obtain with ttl 10 s and LinearBackoff(10ms).
func newBsmProc(t testing.TB, srv *redistest.Server, _ string) proc {
	return &bsmProc{c: redislock.New(newGoRedis(t, srv)),
		retry: countingRetry{RetryStrategy: redislock.LinearBackoff(peerRetryDelay), n: new(atomic.Int64)}}
}

func (p *bsmProc) lock(ctx context.Context, name string) (func() error, error) {
	l, err := p.c.Obtain(ctx, name, peerTTL, &redislock.Options{RetryStrategy: p.retry})
	if err != nil {
		return nil, err
	}
	return func() error { return l.Release(context.Background()) }, nil
}

func (p *bsmProc) failed() int64 { return p.retry.n.Load() }

// --- rueidislock ----------------------------------------------------------------------------------

type rueidislockProc struct {
	l  rueidislock.Locker
	cc *countingClient
}

// countingClient counts the script calls of a rueidis client and those answered nil
// (rueidislock's acquire script answers nil when the key is held by someone else).
type countingClient struct {
	rueidis.Client
	scripts, nils, ones atomic.Int64
}

func (c *countingClient) Do(ctx context.Context, cmd rueidis.Completed) rueidis.RedisResult {
	name := ""
	if cs := cmd.Commands(); len(cs) > 0 {
		name = cs[0]
	}
	res := c.Client.Do(ctx, cmd)
	if name == "EVALSHA" || name == "EVAL" {
		c.scripts.Add(1)
		if v, err := res.ToInt64(); err == nil && v == 1 {
			c.ones.Add(1)
		} else if rueidis.IsRedisNil(err) {
			c.nils.Add(1)
		}
	}
	return res
}

// newRueidislockProc: one Locker (its own rueidis client, with client-side-caching
// invalidations) with KeyMajority 1 and NoLoopTracking, the single-node settings its
// documentation gives; other options default (KeyValidity 5 s, extended every 2.5 s).
func newRueidislockProc(t testing.TB, srv *redistest.Server, id string) proc {
	return newRueidislock(t, srv, id, rueidislock.LockerOption{})
}

func newRueidislock(t testing.TB, srv *redistest.Server, id string, opt rueidislock.LockerOption) *rueidislockProc {
	p := &rueidislockProc{}
	opt.KeyMajority, opt.NoLoopTracking = 1, true
	opt.ClientOption = rueidis.ClientOption{InitAddress: []string{srv.Addr}, ClientName: id}
	opt.ClientBuilder = func(o rueidis.ClientOption) (rueidis.Client, error) {
		c, err := rueidis.NewClient(o)
		if err != nil {
			return nil, err
		}
		p.cc = &countingClient{Client: c}
		return p.cc, nil
	}
	l, err := rueidislock.NewLocker(opt)
	require.NoError(t, err)
	p.l = l
	t.Cleanup(l.Close)
	return p
}

func (p *rueidislockProc) lock(ctx context.Context, name string) (func() error, error) {
	// Without a deadline, an attempt that times out (TryNextAfter, 20 ms) on a free name
	// waits forever for an invalidation (no fallback timer in CSC mode): bound such calls.
	stop := context.CancelFunc(func() {})
	if _, ok := ctx.Deadline(); !ok {
		ctx, stop = context.WithTimeout(ctx, 30*time.Second)
	}
	_, cancel, err := p.l.WithContext(ctx, name)
	if err != nil {
		stop()
		return nil, err
	}
	return func() error { cancel(); stop(); return nil }, nil
}

func (p *rueidislockProc) failed() int64 { return p.cc.nils.Load() }

// --- raw floors ---------------------------------------------------------------------------------

// rawProc is not a lock: "acquire" and "release" are each one EVALSHA of `return 1` on the
// name, the floor of any script-based lock's two round trips.
type rawProc struct{ rc rueidis.Client }

func newRawProc(t testing.TB, srv *redistest.Server, id string) proc {
	rc := namedClient(t, srv, id)
	require.NoError(t, trivial.Exec(context.Background(), rc, []string{"bench:raw"}, []string{"1"}).Error())
	return &rawProc{rc: rc}
}

func (p *rawProc) lock(ctx context.Context, name string) (func() error, error) {
	if err := trivial.Exec(ctx, p.rc, []string{name}, []string{"1"}).Error(); err != nil {
		return nil, err
	}
	return func() error { return trivial.Exec(context.Background(), p.rc, []string{name}, []string{"1"}).Error() }, nil
}

func (p *rawProc) failed() int64 { return 0 }

// rawRlockProc runs rlock's acquire and release scripts through rueidis without the library:
// each acquisition has a field of its own, and a refused acquire is sent again at once (no
// wait, no pub/sub). It is what the protocol allows, the floor of goredisson's own share.
type rawRlockProc struct {
	rc      rueidis.Client
	id      string
	n       atomic.Int64
	refused atomic.Int64
}

func newRawRlockProc(t testing.TB, srv *redistest.Server, id string) proc {
	return &rawRlockProc{rc: namedClient(t, srv, id), id: id}
}

func (p *rawRlockProc) lock(ctx context.Context, name string) (func() error, error) {
	n := strconv.FormatInt(p.n.Add(1), 10)
	field := p.id + ":" + n
	for {
		acquired, err := rawAcquire(ctx, p.rc, name, field)
		if err != nil {
			return nil, err
		}
		if acquired {
			break
		}
		p.refused.Add(1)
	}
	return func() error {
		return rawRelease(context.Background(), p.rc, name, keys.LockChannel(name), field, n)
	}, nil
}

func (p *rawRlockProc) failed() int64 { return p.refused.Load() }

// procName names the i-th simulated process of a contender for CLIENT SETNAME.
func procName(prefix string, i int) string { return fmt.Sprintf("%s-%d", prefix, i) }
