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

// inspect shows a read-write lock's mode, its readers with their timeout keys, its writer,
// and the waiters on its channel.
func TestInspectReadWrite(t *testing.T) {
	srv := redistest.Shared(t)
	ctx := context.Background()
	lc := rlocktest.NewClient(t, srv.Client(t), rlock.Options{})
	name := unique("doc:")
	rw := lc.NewReadWriteLock(name)
	a, b := rlock.NewOwner(ctx), rlock.NewOwner(ctx)
	if err := rw.ReadLock().Lock(a); err != nil {
		t.Fatal(err)
	}
	if err := rw.ReadLock().LockFor(a, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	if err := rw.ReadLock().Lock(b); err != nil {
		t.Fatal(err)
	}
	oa, _ := rlock.OwnerFrom(a)

	code, out, _ := cli(t, nil, "--redis", srv.Addr, "inspect", name)
	if code != exitOK {
		t.Fatalf("exit %d, want 0 for a held read-write lock", code)
	}
	for _, want := range []string{
		name + ": read-write lock in read mode",
		"holders:  2",
		"reader client " + lc.ID() + "  owner " + oa.String() + "  hold count 2  timeout keys ",
		"waiters:  0 clients subscribed to " + keys.ReadWriteChannel(name),
	} {
		if !strings.Contains(out, want) {
			t.Errorf("inspect output lacks %q:\n%s", want, out)
		}
	}

	_, got := inspectJSON(t, srv.Addr, name)
	st := got.Locks[0]
	if st.Kind != kindReadWrite || st.Mode != "read" || st.Variant != variantReadWrite || st.Channel != keys.ReadWriteChannel(name) {
		t.Fatalf("state %+v", st)
	}
	for _, h := range st.Holders {
		if h.Role != roleReader || len(h.ReadTimeoutsMillis) != int(h.HoldCount) {
			t.Errorf("reader %+v: want role reader and one timeout per hold", h)
		}
		for _, ms := range h.ReadTimeoutsMillis {
			if ms <= 0 || ms > 30000 {
				t.Errorf("reader %s: timeout key PTTL %d", h.Field, ms)
			}
		}
	}

	// A writer of another client waits: its subscription shows on the read-write channel.
	w := rlocktest.NewClient(t, srv.Client(t), rlock.Options{}).NewReadWriteLock(name).WriteLock()
	wctx, cancel := context.WithCancel(rlock.NewOwner(ctx))
	defer cancel()
	waited := make(chan error, 1)
	go func() { waited <- w.Lock(wctx) }()
	eventually(t, "one subscribed waiter", func() bool {
		_, got := inspectJSON(t, srv.Addr, name)
		return *got.Locks[0].Subscribers.Classic >= 1
	})
	for range 2 {
		if err := rw.ReadLock().Unlock(a); err != nil {
			t.Fatal(err)
		}
	}
	if err := rw.ReadLock().Unlock(b); err != nil {
		t.Fatal(err)
	}
	if err := <-waited; err != nil {
		t.Fatal(err)
	}
	_, got = inspectJSON(t, srv.Addr, name)
	st = got.Locks[0]
	if st.Mode != "write" || len(st.Holders) != 1 || st.Holders[0].Role != roleWriter || !strings.HasSuffix(st.Holders[0].Field, ":write") {
		t.Errorf("after the readers left: %+v, want one writer in write mode", st)
	}
	if err := w.Unlock(wctx); err != nil {
		t.Fatal(err)
	}
}
