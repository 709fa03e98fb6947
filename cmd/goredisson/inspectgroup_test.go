package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/goredisson/goredisson/internal/redistest"
	"github.com/goredisson/goredisson/internal/redistest/rlocktest"
	"github.com/goredisson/goredisson/rlock"
)

// TestInspectGroup: inspect --servers shows a RedLock held on three servers, and --group a
// MultiLock over names on two servers, with the group summary and each lock's state.
func TestInspectGroup(t *testing.T) {
	srvs := []*redistest.Server{redistest.StartProcess(t, redistest.ProcessOptions{}),
		redistest.StartProcess(t, redistest.ProcessOptions{}), redistest.StartProcess(t, redistest.ProcessOptions{})}
	ctx := rlock.NewOwner(context.Background())
	owner, _ := rlock.OwnerFrom(ctx)
	name := unique("res:")
	var locks []*rlock.Lock
	var addrs []string
	for _, srv := range srvs {
		locks = append(locks, rlocktest.NewClient(t, srv.Client(t), rlock.Options{}).NewLock(name))
		addrs = append(addrs, srv.Addr)
	}
	free := unique("free:")
	code, out, _ := cli(t, nil, "inspect", "--servers", strings.Join(addrs, ","), free)
	if code != exitNotFound || !strings.Contains(out, "group of 3 locks: 0 held") {
		t.Errorf("a free group: exit %d, want %d and the summary", code, exitNotFound)
	}

	// A RedLock held on a majority: the first server's lock taken by another owner first.
	other := rlock.NewOwner(context.Background())
	if err := locks[0].Lock(other); err != nil {
		t.Fatal(err)
	}
	r, err := rlock.NewRedLock(locks...)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.TryLock(ctx, 0, 0); err != nil {
		t.Fatal(err)
	}
	code, out, _ = cli(t, nil, "inspect", "--servers", strings.Join(addrs, ","), name)
	if code != exitOK {
		t.Errorf("exit %d, want 0", code)
	}
	for _, want := range []string{
		"group of 3 locks: 3 held",
		"owner " + owner.String() + " holds 2 of 3: RedLock majority (2): yes; MultiLock (all): no",
		"lock 2 of 3, on " + srvs[1].Addr + ":",
		"  " + name + ": lock (hash in Redisson RLock layout",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("inspect output lacks %q", want)
		}
	}
	code, out, _ = cli(t, nil, "--redis", srvs[0].Addr, "inspect", "--json", "--group", name, name+"@"+srvs[1].Addr)
	var got struct {
		Group groupState `json:"group"`
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("no JSON: %v\n%s", err, out)
	}
	g := got.Group
	if code != exitOK || g.Size != 2 || g.Held != 2 || g.OwnerHeld != 1 || g.Majority || g.All ||
		g.Members[1].Server != srvs[1].Addr || len(g.Members[1].Lock.Holders) != 1 {
		t.Errorf("exit %d, group %+v", code, g)
	}
	code, _, errOut := cli(t, nil, "inspect", "--group", "@"+srvs[0].Addr)
	if code != exitUsage || !strings.Contains(errOut, "bad group member") {
		t.Errorf("a member without a name: exit %d", code)
	}
	if err := r.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
}
