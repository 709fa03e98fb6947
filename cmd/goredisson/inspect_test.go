package main

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/goredisson/goredisson/internal/keys"
	"github.com/goredisson/goredisson/internal/redistest"
	"github.com/goredisson/goredisson/internal/redistest/rlocktest"
	"github.com/goredisson/goredisson/rlock"
)

func TestInspectGoHolder(t *testing.T) {
	srv := redistest.Shared(t)
	ctx := context.Background()
	lc := rlocktest.NewClient(t, srv.Client(t), rlock.Options{})
	name := unique("lock:stock:")
	l := lc.NewLock(name)
	octx := rlock.NewOwner(ctx)
	for range 2 { // re-enter: hold count 2
		if err := l.Lock(octx); err != nil {
			t.Fatal(err)
		}
	}
	owner, _ := rlock.OwnerFrom(octx)

	code, out, _ := cli(t, nil, "--redis", srv.Addr, "inspect", name)
	if code != exitOK {
		t.Fatalf("exit %d, want 0", code)
	}
	for _, want := range []string{
		name + ": lock (hash in Redisson RLock layout",
		"holders:  1",
		"client " + lc.ID() + "  owner " + owner.String() + "  hold count 2",
		"runtime go: a goredisson client, connected from ", // 127.0.0.1, or Docker's gateway in a container
		"ttl:      ",
		"waiters:  0 clients subscribed to " + keys.LockChannel(name) + " (PUBSUB NUMSUB), 0 clients sharded (PUBSUB SHARDNUMSUB)",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("inspect output lacks %q", want)
		}
	}

	// A waiter of another client: its subscription shows as one waiting client.
	l2 := rlocktest.NewClient(t, srv.Client(t), rlock.Options{}).NewLock(name)
	wctx, cancel := context.WithCancel(rlock.NewOwner(ctx))
	defer cancel()
	waited := make(chan error, 1)
	go func() { waited <- l2.Lock(wctx) }()
	var st *lockState
	eventually(t, "one subscribed waiter", func() bool {
		_, got := inspectJSON(t, srv.Addr, name)
		st = got.Locks[0]
		return *st.Subscribers.Classic == 1
	})
	if st.Kind != kindLock || st.RedisType != "hash" || len(st.Holders) != 1 {
		t.Fatalf("state %+v", st)
	}
	h := st.Holders[0]
	if h.ClientID != lc.ID() || h.OwnerID != owner.String() || h.HoldCount != 2 || h.Field != lc.ID()+":"+owner.String() || h.Runtime != "go" ||
		!strings.Contains(h.Address, ":") || h.ConnectionName != rlock.ConnectionNamePrefix+lc.ID() {
		t.Errorf("holder %+v", h)
	}
	if st.TTLMillis == nil || *st.TTLMillis <= 0 || *st.TTLMillis > 30000 {
		t.Errorf("ttl_ms %v, want a watchdog lease in (0, 30000]", st.TTLMillis)
	}
	if st.Subscribers.Sharded == nil || *st.Subscribers.Sharded != 0 {
		t.Errorf("sharded subscribers %v, want 0 on Redis 7", st.Subscribers.Sharded)
	}
	for range 2 {
		if err := l.Unlock(octx); err != nil {
			t.Fatal(err)
		}
	}
	if err := <-waited; err != nil {
		t.Fatalf("waiter: %v", err)
	}
	if err := l2.Unlock(wctx); err != nil {
		t.Fatal(err)
	}
}

func TestInspectJavaHolder(t *testing.T) {
	srv := redistest.Shared(t)
	rc := srv.Client(t)
	name := unique("order:")
	javaLock(t, rc, name)
	srv.Listen(t, keys.LockChannel(name)) // a waiting Java client, as far as Redis can tell

	eventually(t, "the subscription", func() bool {
		_, got := inspectJSON(t, srv.Addr, name)
		return *got.Locks[0].Subscribers.Classic == 1
	})

	t.Run("text", func(t *testing.T) {
		code, out, _ := cli(t, nil, "--redis", srv.Addr, "inspect", name)
		if code != exitOK {
			t.Fatalf("exit %d, want 0", code)
		}
		for _, want := range []string{
			name + ": lock",
			"client " + javaClient + "  owner 57  hold count 1",
			"runtime unknown: no connection named goredisson:" + javaClient + ": a Java Redisson client",
			"waiters:  1 client subscribed to redisson_lock__channel:{" + name + "}",
		} {
			if !strings.Contains(out, want) {
				t.Errorf("inspect output lacks %q", want)
			}
		}
	})

	// The JSON field names are an interface: check them as raw keys.
	t.Run("JSON keys", func(t *testing.T) {
		_, raw, _ := cli(t, nil, "--redis", srv.Addr, "inspect", "--json", name)
		var doc struct {
			Locks []map[string]json.RawMessage `json:"locks"`
		}
		if err := json.Unmarshal([]byte(raw), &doc); err != nil {
			t.Fatal(err)
		}
		gotKeys := mapKeys(doc.Locks[0])
		wantKeys := []string{"channel", "holders", "kind", "name", "notes", "redis_type", "subscribers", "ttl_ms"}
		if !slices.Equal(gotKeys, wantKeys) {
			t.Errorf("lock keys %v, want %v", gotKeys, wantKeys)
		}
		var holders []map[string]json.RawMessage
		_ = json.Unmarshal(doc.Locks[0]["holders"], &holders)
		if len(holders) != 1 || !slices.Equal(mapKeys(holders[0]),
			[]string{"client_id", "field", "hold_count", "owner_id", "runtime", "runtime_hint"}) {
			t.Errorf("holder keys: %s", doc.Locks[0]["holders"])
		}
		var subs map[string]json.RawMessage
		_ = json.Unmarshal(doc.Locks[0]["subscribers"], &subs)
		if !slices.Equal(mapKeys(subs), []string{"classic", "sharded"}) {
			t.Errorf("subscribers: %s", doc.Locks[0]["subscribers"])
		}
	})

	t.Run("JSON values", func(t *testing.T) {
		_, got := inspectJSON(t, srv.Addr, name)
		st := got.Locks[0]
		h := st.Holders[0]
		if st.Kind != "lock" || st.Name != name || st.Channel != "redisson_lock__channel:{"+name+"}" ||
			h.Field != javaField || h.ClientID != javaClient || h.OwnerID != "57" || h.HoldCount != 1 || h.Runtime != "unknown" {
			t.Errorf("state %+v holder %+v", st, h)
		}
		if *st.TTLMillis <= 0 || *st.TTLMillis > 30000 {
			t.Errorf("ttl_ms %d", *st.TTLMillis)
		}
	})
}

func mapKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

func TestInspectNotALock(t *testing.T) {
	srv := redistest.Shared(t)
	rc := srv.Client(t)
	missing, str, plainHash, rw, lock := unique("missing:"), unique("string:"), unique("hash:"), unique("rw:"), unique("lock:")
	redistest.Do(t, rc, rc.B().Set().Key(str).Value("x").Build())
	redistest.Do(t, rc, rc.B().Hset().Key(plainHash).FieldValue().FieldValue("name", "widget").Build())
	// Redisson's RReadWriteLock, write-locked by thread 57.
	redistest.Do(t, rc, rc.B().Hset().Key(rw).FieldValue().FieldValue("mode", "write").FieldValue(javaField+":write", "1").Build())
	javaLock(t, rc, lock)

	code, got := inspectJSON(t, srv.Addr, missing, str, plainHash, rw, lock)
	if code != exitNotFound {
		t.Errorf("exit %d, want %d when a name is not a lock", code, exitNotFound)
	}
	want := []struct{ kind, typ, variant string }{
		{"not_found", "none", ""}, {"other", "string", ""}, {"other", "hash", ""},
		{"read_write_lock", "hash", "redisson_read_write_lock"}, {"lock", "hash", ""},
	}
	for i, w := range want {
		st := got.Locks[i]
		if st.Kind != w.kind || st.RedisType != w.typ || st.Variant != w.variant {
			t.Errorf("%s: kind %s type %s variant %q, want %+v", st.Name, st.Kind, st.RedisType, st.Variant, w)
		}
	}
	if got.Locks[0].TTLMillis != nil || len(got.Locks[0].Holders) != 0 {
		t.Errorf("missing key: ttl %v holders %v", got.Locks[0].TTLMillis, got.Locks[0].Holders)
	}
	if h := got.Locks[3].Holders; len(h) != 1 || h[0].Role != "writer" || h[0].OwnerID != "57" || got.Locks[3].Mode != "write" {
		t.Errorf("read/write lock %+v, want one writer in write mode", got.Locks[3])
	}

	code, out, _ := cli(t, nil, "--redis", srv.Addr, "inspect", missing)
	if code != exitNotFound || !strings.Contains(out, missing+": not found (no such key: the lock is free)") {
		t.Errorf("missing: exit %d, output %q", code, out)
	}
	code, out, _ = cli(t, nil, "--redis", srv.Addr, "inspect", str)
	if code != exitNotFound || !strings.Contains(out, str+": other (Redis type string, not a Redisson RLock)") {
		t.Errorf("string: exit %d, output %q", code, out)
	}
}

// The lock name is used verbatim; a name with its own hash tag keeps it in the channel.
func TestInspectHashTag(t *testing.T) {
	srv := redistest.Shared(t)
	name := "{" + unique("user") + "}:lock"
	_, got := inspectJSON(t, srv.Addr, name)
	if got.Locks[0].Channel != "redisson_lock__channel:"+name {
		t.Errorf("channel %q", got.Locks[0].Channel)
	}
}
