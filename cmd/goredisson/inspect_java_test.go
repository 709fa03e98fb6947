package main

import (
	"testing"
	"time"

	"github.com/goredisson/goredisson/integration/javapeer"
	"github.com/goredisson/goredisson/internal/redistest"
	"github.com/goredisson/goredisson/internal/redistest/rlocktest"
	"github.com/goredisson/goredisson/rlock"
)

// TestInspectRealJavaAndGoHolders shows inspect on a lock held by real Java Redisson (the
// interop peer) and one held by goredisson: each holder's client id, owner and count, and
// its runtime: Go, found by its named connection, and unknown for Java.
func TestInspectRealJavaAndGoHolders(t *testing.T) {
	srv := redistest.Start(t)
	peer := javapeer.Start(t, javapeer.JarPath(t, "4.7.0"), "redis://"+srv.Addr)
	ctx := redistest.Context(t, 30*time.Second)
	javaName, goName := unique("java:"), unique("go:")

	if r, err := peer.Do(ctx, "worker", "lock", javaName); err != nil || !r.OK {
		t.Fatalf("java lock: %v %+v", err, r)
	}
	javaID, err := peer.ClientID(ctx)
	if err != nil {
		t.Fatal(err)
	}
	tid, err := peer.Do(ctx, "worker", "threadid")
	if err != nil || !tid.OK {
		t.Fatalf("java thread id: %v %+v", err, tid)
	}

	lc := rlocktest.NewClient(t, srv.Client(t), rlock.Options{})
	l := lc.NewLock(goName)
	octx := rlock.NewOwner(ctx)
	if err := l.Lock(octx); err != nil {
		t.Fatal(err)
	}
	owner, _ := rlock.OwnerFrom(octx)

	code, got := inspectJSON(t, srv.Addr, javaName, goName)
	if code != exitOK {
		t.Fatalf("exit %d", code)
	}
	for _, c := range []struct {
		st                     *lockState
		client, owner, runtime string
	}{
		{got.Locks[0], javaID, tid.Value, runtimeUnknown}, // Redisson names no connection by default
		{got.Locks[1], lc.ID(), owner.String(), runtimeGo},
	} {
		if c.st.Kind != kindLock || len(c.st.Holders) != 1 {
			t.Fatalf("state %+v", c.st)
		}
		h := c.st.Holders[0]
		if h.ClientID != c.client || h.OwnerID != c.owner || h.HoldCount != 1 || h.Runtime != c.runtime {
			t.Errorf("holder %+v, want client %s owner %s count 1 runtime %s", h, c.client, c.owner, c.runtime)
		}
		if c.st.TTLMillis == nil || *c.st.TTLMillis <= 0 || *c.st.TTLMillis > 30000 {
			t.Errorf("ttl %v, want a watchdog lease", c.st.TTLMillis)
		}
	}
	if err := l.Unlock(octx); err != nil {
		t.Fatal(err)
	}
}
