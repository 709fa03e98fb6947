package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/goredisson/goredisson/internal/keys"
	"github.com/goredisson/goredisson/internal/redistest"
	"github.com/goredisson/goredisson/internal/redistest/rlocktest"
	"github.com/goredisson/goredisson/rlock"
)

// Inspect shows a fair lock's queue, first waiter first, with each waiter's deadline; and
// a dead waiter's passed deadline, also when the lock is free.
func TestInspectFairQueue(t *testing.T) {
	srv := redistest.Shared(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	lc := rlocktest.NewClient(t, srv.Client(t), rlock.Options{})
	name := unique("lock:fair:")
	l := lc.NewFairLock(name)
	holder := rlock.NewOwner(ctx)
	if err := l.Lock(holder); err != nil {
		t.Fatal(err)
	}
	start := time.Now().UnixMilli()
	var fields []string
	waited := make(chan error, 2)
	for range 2 {
		w := rlock.NewOwner(ctx)
		o, _ := rlock.OwnerFrom(w)
		fields = append(fields, lc.ID()+":"+o.String())
		go func() { waited <- l.Lock(w) }()
		eventually(t, "waiter queued", func() bool {
			_, got := inspectJSON(t, srv.Addr, name)
			return len(got.Locks[0].Queue) == len(fields)
		})
	}
	code, got := inspectJSON(t, srv.Addr, name)
	st := got.Locks[0]
	if code != exitOK || st.Kind != kindLock || st.Variant != variantFair || len(st.Holders) != 1 {
		t.Fatalf("exit %d, state %+v", code, st)
	}
	wait := rlock.DefaultFairLockWaitTimeout.Milliseconds()
	for i, w := range st.Queue {
		if w.Position != i+1 || w.Field != fields[i] || w.ClientID != lc.ID() || w.Channel != keys.FairWaiterChannel(name, fields[i]) {
			t.Errorf("waiter %d: %+v", i, w)
		}
		// The first waiter's deadline: the holder's lease plus the wait; each next one a wait later.
		want := start + rlock.DefaultWatchdogTimeout.Milliseconds() + int64(i+1)*wait
		if w.DeadlineMs == nil || *w.DeadlineMs < want-2000 || *w.DeadlineMs > want+2000 {
			t.Errorf("waiter %d: deadline %v, want about %d", i, w.DeadlineMs, want)
		}
		if w.DeadlineInMs == nil || *w.DeadlineInMs <= 0 {
			t.Errorf("waiter %d: deadline_in_ms %v, want positive", i, w.DeadlineInMs)
		}
	}
	_, out, _ := cli(t, nil, "--redis", srv.Addr, "inspect", name)
	for _, want := range []string{
		"queue:    2 waiters (first is woken by the next release)",
		"1. client " + lc.ID() + "  owner ",
		"2. client " + lc.ID() + "  owner ",
		"deadline ",
		"(in 5m",
		"a fair lock (Redisson's RFairLock, goredisson's NewFairLock): 2 waiting in " + keys.FairQueue(name),
	} {
		if !strings.Contains(out, want) {
			t.Errorf("inspect output lacks %q:\n%s", want, out)
		}
	}
	cancel()
	for range 2 {
		<-waited
	}
	if err := l.Unlock(holder); err != nil {
		t.Fatal(err)
	}

	// A waiter that died while first, with the lock free: a passed deadline, kind not_found.
	dead := "6f1c2a9e-3b7d-4c1e-9a55-0d2f8e4b7c11:7"
	rc := srv.Client(t)
	redistest.Do(t, rc, rc.B().Rpush().Key(keys.FairQueue(name)).Element(dead).Build())
	redistest.Do(t, rc, rc.B().Zadd().Key(keys.FairTimeout(name)).ScoreMember().
		ScoreMember(float64(time.Now().Add(-time.Minute).UnixMilli()), dead).Build())
	code, got = inspectJSON(t, srv.Addr, name)
	st = got.Locks[0]
	if code != exitNotFound || st.Kind != kindNotFound || len(st.Queue) != 1 || *st.Queue[0].DeadlineInMs > -59000 {
		t.Fatalf("exit %d, state %+v", code, st)
	}
	_, out, _ = cli(t, nil, "--redis", srv.Addr, "inspect", name)
	for _, want := range []string{"1. client 6f1c2a9e-3b7d-4c1e-9a55-0d2f8e4b7c11  owner 7", "ago)", "1 waiter(s) past their deadline"} {
		if !strings.Contains(out, want) {
			t.Errorf("inspect output lacks %q:\n%s", want, out)
		}
	}
}
