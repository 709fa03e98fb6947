package main

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/goredisson/goredisson/internal/redistest"
	"github.com/goredisson/goredisson/internal/redistest/rlocktest"
	"github.com/goredisson/goredisson/rlock"
)

// TestInspectSynchronizers: inspect recognises a countdown latch and a semaphore by the
// channel their waiters listen on, an integer nobody waits on as either, and an expirable
// semaphore by its held permits, whose ids and leases it shows.
func TestInspectSynchronizers(t *testing.T) {
	srv := redistest.Shared(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c := rlocktest.NewClient(t, srv.Client(t), rlock.Options{})
	latchName, semName, plain, xName := unique("latch:"), unique("sem:"), unique("int:"), unique("xsem:")

	l := c.NewCountDownLatch(latchName)
	if _, err := l.TrySetCount(ctx, 3); err != nil {
		t.Fatal(err)
	}
	s := c.NewSemaphore(semName)
	if _, err := s.TrySetPermits(ctx, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := c.NewSemaphore(plain).TrySetPermits(ctx, 7); err != nil {
		t.Fatal(err)
	}
	x := c.NewExpirableSemaphore(xName)
	if _, err := x.TrySetPermits(ctx, 3); err != nil {
		t.Fatal(err)
	}
	leased, err := x.Acquire(ctx, 1, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	forever, err := x.Acquire(ctx, 1, 0)
	if err != nil {
		t.Fatal(err)
	}
	wctx, stop := context.WithCancel(ctx)
	defer stop()
	done := make(chan struct{}, 2)
	go func() { _ = l.Await(wctx); done <- struct{}{} }()
	go func() { _ = s.Acquire(wctx, 1); done <- struct{}{} }()
	var got inspected
	var code int
	eventually(t, "the waiters subscribed", func() bool {
		code, got = inspectJSON(t, srv.Addr, latchName, semName, plain, xName)
		return got.Locks[0].Kind == kindLatch && got.Locks[1].Kind == kindSemaphore
	})
	_, out, _ := cli(t, nil, "--redis", srv.Addr, "inspect", xName, latchName) // the latch waiter still waits
	stop()
	<-done
	<-done
	if code != exitOK {
		t.Errorf("exit %d, want 0: every name is recognised", code)
	}
	for i, want := range []struct {
		kind    string
		count   int64
		channel string
	}{
		{kindLatch, 3, "redisson_countdownlatch__channel__{" + latchName + "}"},
		{kindSemaphore, 0, "redisson_sc:{" + semName + "}"},
		{kindLatchOrSemphore, 7, "redisson_sc:{" + plain + "}"},
		{kindExpirable, 1, "redisson_sc:{" + xName + "}"},
	} {
		st := got.Locks[i]
		if st.Kind != want.kind || st.Count == nil || *st.Count != want.count || st.Channel != want.channel {
			t.Errorf("%s: kind %s count %v channel %s, want %+v", st.Name, st.Kind, st.Count, st.Channel, want)
		}
	}
	ps := got.Locks[3].Permits
	slices.SortFunc(ps, func(a, b permit) int { return strings.Compare(a.ID, b.ID) })
	want := []string{leased[0], forever[0]}
	slices.Sort(want)
	if len(ps) != 2 || ps[0].ID != want[0] || ps[1].ID != want[1] {
		t.Fatalf("permits %+v, want ids %v", ps, want)
	}
	for _, p := range ps {
		if p.ID == forever[0] && p.LeaseMS != -1 || p.ID == leased[0] && (p.LeaseMS < 50*60*1000 || p.Expired) {
			t.Errorf("permit %+v", p)
		}
	}

	for _, w := range []string{
		xName + ": permit-expirable semaphore (Redisson RPermitExpirableSemaphore)",
		"available permits: 1",
		"held permits: 2 (in {" + xName + "}:timeout)",
		forever[0] + "  never expires",
		leased[0] + "  expires in ",
		latchName + ": countdown latch (Redisson RCountDownLatch)",
		"count:    3",
	} {
		if !strings.Contains(out, w) {
			t.Errorf("inspect output lacks %q", w)
		}
	}
}
