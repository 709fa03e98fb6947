// Command lockclient is one client of the partition tests (package partition): it runs in a
// network namespace of its own, takes a lock over and over for a while, writes to the
// test's resource inside each hold (checking before each write that it still holds the
// lock), and prints every operation as a JSON line on stdout:
// its invocation, then its outcome (ok, fail, or info when the outcome is unknown).
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/redis/rueidis"

	"github.com/goredisson/goredisson/rlock"
)

// Event is one line of the history: an operation's invocation or outcome.
type Event struct {
	Client string `json:"c"`
	Op     string `json:"op"`  // "acquire", "write", "release", "lost"
	Type   string `json:"t"`   // "invoke", "ok", "fail", "info"
	Seq    int    `json:"seq"` // the client's acquisition number
	At     int64  `json:"at"`  // Unix nanoseconds
	Token  int64  `json:"tok"` // fencing token (fenced lock), else 0
	Err    string `json:"err,omitempty"`
}

var out = struct {
	sync.Mutex
	enc *json.Encoder
}{enc: json.NewEncoder(os.Stdout)}

func emit(e Event) {
	e.At = time.Now().UnixNano()
	out.Lock()
	defer out.Unlock()
	_ = out.enc.Encode(e)
}

func main() {
	var (
		id       = flag.String("id", "c", "client id")
		servers  = flag.String("redis", "", "comma-separated host:port of the servers; several make a RedLock")
		sentinel = flag.String("sentinel", "", "comma-separated host:port of Sentinels (master name mymaster)")
		kind     = flag.String("type", "lock", "lock, fenced or redlock")
		name     = flag.String("name", "partition", "lock name")
		resource = flag.String("resource", "", "host:port of the resource")
		duration = flag.Duration("duration", 10*time.Second, "how long to run")
		writes   = flag.Int("writes", 4, "writes to the resource in each hold")
		gap      = flag.Duration("gap", 50*time.Millisecond, "pause between the writes of a hold")
		watchdog = flag.Duration("watchdog", 2*time.Second, "WatchdogTimeout")
	)
	flag.Parse()
	if err := run(*id, *servers, *sentinel, *kind, *name, *resource, *duration, *writes, *gap, *watchdog); err != nil {
		fmt.Fprintln(os.Stderr, "lockclient:", err)
		os.Exit(1)
	}
}

// locker is what the loop needs of each lock type.
type locker struct {
	acquire func(ctx context.Context) (token int64, err error)
	held    func(ctx context.Context) (context.Context, context.CancelFunc, error)
	release func(ctx context.Context) error
}

func run(id, servers, sentinel, kind, name, resource string, duration time.Duration, writes int, gap, watchdog time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), duration)
	defer cancel()
	opts := rlock.Options{WatchdogTimeout: watchdog}
	newClient := func(addrs []string, sentinel bool) (*rlock.Client, error) {
		o := rueidis.ClientOption{InitAddress: addrs, ConnWriteTimeout: time.Second, Dialer: net.Dialer{Timeout: time.Second}}
		if sentinel {
			o.Sentinel = rueidis.SentinelOption{MasterSet: "mymaster"}
		}
		rc, err := rueidis.NewClient(o)
		if err != nil {
			return nil, err
		}
		return rlock.New(context.Background(), rc, opts)
	}
	var l locker
	switch {
	case sentinel != "":
		c, err := newClient(strings.Split(sentinel, ","), true)
		if err != nil {
			return err
		}
		defer c.Close()
		l = plain(c, kind, name)
	case kind == "redlock":
		var members []*rlock.Lock
		for _, addr := range strings.Split(servers, ",") {
			c, err := newClient([]string{addr}, false)
			if err != nil {
				return err
			}
			defer c.Close()
			members = append(members, c.NewLock(name))
		}
		r, err := rlock.NewRedLock(members...)
		if err != nil {
			return err
		}
		l = locker{
			acquire: func(ctx context.Context) (int64, error) { _, err := r.TryLock(ctx, time.Second, 0); return 0, err },
			held:    r.Held,
			release: r.Unlock,
		}
	default:
		c, err := newClient([]string{servers}, false)
		if err != nil {
			return err
		}
		defer c.Close()
		l = plain(c, kind, name)
	}
	res, err := net.DialTimeout("tcp", resource, 2*time.Second)
	if err != nil {
		return err
	}
	defer res.Close()
	r := bufio.NewReader(res)
	write := func(seq int, tok int64) {
		emit(Event{Client: id, Op: "write", Type: "invoke", Seq: seq, Token: tok})
		_ = res.SetDeadline(time.Now().Add(2 * time.Second))
		_, err := fmt.Fprintf(res, "W %s %d %d\n", id, seq, tok)
		line := ""
		if err == nil {
			line, err = r.ReadString('\n')
		}
		switch {
		case err != nil:
			emit(Event{Client: id, Op: "write", Type: "info", Seq: seq, Token: tok, Err: err.Error()})
		case strings.TrimSpace(line) == "A":
			emit(Event{Client: id, Op: "write", Type: "ok", Seq: seq, Token: tok})
		default:
			emit(Event{Client: id, Op: "write", Type: "fail", Seq: seq, Token: tok, Err: "refused"})
		}
	}
	for seq := 1; ctx.Err() == nil; seq++ {
		octx := rlock.NewOwner(ctx)
		emit(Event{Client: id, Op: "acquire", Type: "invoke", Seq: seq})
		actx, acancel := context.WithTimeout(octx, 3*time.Second)
		tok, err := l.acquire(actx)
		acancel()
		if err != nil {
			typ := "fail"
			if !errors.Is(err, rlock.ErrLocked) && !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled) {
				typ = "info" // a connection error: the acquisition may have happened
			}
			emit(Event{Client: id, Op: "acquire", Type: typ, Seq: seq, Err: err.Error()})
			pause(ctx, 20*time.Millisecond)
			continue
		}
		emit(Event{Client: id, Op: "acquire", Type: "ok", Seq: seq, Token: tok})
		work, stop, herr := l.held(octx)
		if herr == nil {
			go func(seq int) {
				<-work.Done()
				if cause := context.Cause(work); errors.Is(cause, rlock.ErrLockLost) {
					emit(Event{Client: id, Op: "lost", Type: "ok", Seq: seq, Err: cause.Error()})
				}
			}(seq)
		}
		// A careful holder: before each write it checks that the lock is still held (the
		// context from Held ends before the lock can be anyone else's).
		for i := range writes {
			if i > 0 {
				time.Sleep(gap) // not ctx: a hold keeps its shape to the end
			}
			if herr == nil && work.Err() != nil {
				break
			}
			write(seq, tok)
		}
		if herr == nil {
			stop()
		}
		emit(Event{Client: id, Op: "release", Type: "invoke", Seq: seq})
		if err := l.release(octx); err != nil {
			emit(Event{Client: id, Op: "release", Type: "fail", Seq: seq, Err: err.Error()})
		} else {
			emit(Event{Client: id, Op: "release", Type: "ok", Seq: seq})
		}
		pause(ctx, time.Duration(rand.Int64N(int64(20*time.Millisecond))))
	}
	return nil
}

// plain returns the locker of a single lock of kind on c.
func plain(c *rlock.Client, kind, name string) locker {
	if kind == "fenced" {
		f := c.NewFencedLock(name)
		return locker{
			acquire: func(ctx context.Context) (int64, error) { return f.TryLock(ctx, time.Second, 0) },
			held: func(ctx context.Context) (context.Context, context.CancelFunc, error) {
				w, stop, _, err := f.Held(ctx)
				return w, stop, err
			},
			release: f.Unlock,
		}
	}
	l := c.NewLock(name)
	return locker{
		acquire: func(ctx context.Context) (int64, error) { return 0, l.TryLock(ctx, time.Second, 0) },
		held:    l.Held,
		release: l.Unlock,
	}
}

func pause(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}
