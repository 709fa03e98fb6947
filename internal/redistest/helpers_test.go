package redistest

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestNameIsUniqueAndKeyShaped(t *testing.T) {
	t.Run("sub/test", func(t *testing.T) {
		a, b := Name(t), Name(t)
		if a == b {
			t.Errorf("Name returned %q twice", a)
		}
		if !strings.HasPrefix(a, "TestNameIsUniqueAndKeyShaped:sub:test:") || strings.Contains(a, "/") {
			t.Errorf("Name = %q, want the test's name with ':' for '/' and a number", a)
		}
	})
}

func TestOverlap(t *testing.T) {
	var o Overlap
	others, leaveA := o.Enter()
	if others != 0 {
		t.Fatalf("first entry: %d others inside", others)
	}
	others, leaveB := o.Enter()
	if others != 1 || o.Violations() != 1 {
		t.Fatalf("second entry while the first is inside: %d others, %d violations; want 1, 1", others, o.Violations())
	}
	leaveA()
	leaveB()
	others, leave := o.Enter()
	leave()
	if others != 0 || o.Violations() != 1 || o.Entries() != 3 {
		t.Errorf("entry after both left: %d others, %d violations, %d entries; want 0, 1, 3", others, o.Violations(), o.Entries())
	}

	var wg sync.WaitGroup
	var serial sync.Mutex
	var p Overlap
	for range 8 {
		wg.Go(func() {
			for range 100 {
				serial.Lock()
				_, leave := p.Enter()
				leave()
				serial.Unlock()
			}
		})
	}
	wg.Wait()
	if p.Violations() != 0 || p.Entries() != 800 {
		t.Errorf("serialized entries: %d violations, %d entries; want 0, 800", p.Violations(), p.Entries())
	}
}

func TestPoll(t *testing.T) {
	n := 0
	if !Poll(time.Second, time.Millisecond, func() bool { n++; return n == 3 }) || n != 3 {
		t.Errorf("Poll stopped after %d calls, want true after 3", n)
	}
	start := time.Now()
	if Poll(30*time.Millisecond, time.Millisecond, func() bool { return false }) {
		t.Error("Poll of a false condition returned true")
	}
	if took := time.Since(start); took < 30*time.Millisecond {
		t.Errorf("Poll gave up after %v, before its 30 ms", took)
	}
}

func TestSyncBuffer(t *testing.T) {
	var b SyncBuffer
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for range 100 {
				_, _ = b.Write([]byte("a"))
				_, _ = b.WriteString("b")
			}
		})
	}
	wg.Wait()
	if s := b.String(); len(s) != 800 || strings.Count(s, "a") != 400 {
		t.Errorf("%d bytes, %d of them a; want 800, 400", len(s), strings.Count(s, "a"))
	}
}

func TestParseClientList(t *testing.T) {
	got := ParseClientList("id=3 addr=127.0.0.1:5001 laddr=127.0.0.1:6379 name=a sub=1 psub=0 ssub=0 cmd=subscribe\n" +
		"id=4 addr=127.0.0.1:5002 name= sub=0 psub=0 ssub=2 cmd=ssubscribe\r\n" +
		"id=5 addr=127.0.0.1:5003 name=c sub=0 psub=0 ssub=0 cmd=client|list\n\n")
	want := []ClientConn{
		{ID: 3, Addr: "127.0.0.1:5001", Name: "a", Sub: 1},
		{ID: 4, Addr: "127.0.0.1:5002", SSub: 2},
		{ID: 5, Addr: "127.0.0.1:5003", Name: "c"},
	}
	if !slices.Equal(got, want) {
		t.Errorf("ParseClientList = %+v, want %+v", got, want)
	}
	if !got[0].Subscribed() || !got[1].Subscribed() || got[2].Subscribed() {
		t.Errorf("Subscribed: %v %v %v, want true true false", got[0].Subscribed(), got[1].Subscribed(), got[2].Subscribed())
	}
}

func TestReadsAndPubSub(t *testing.T) {
	srv := Start(t) // KillSubscribed below reaches every connection of the server
	rc := srv.Client(t)
	key, ch := Name(t), Name(t)

	if Exists(t, rc, key) || PTTL(t, rc, key) != -2 || len(HGetAll(t, rc, key)) != 0 {
		t.Fatalf("a missing key: exists, or has a TTL or fields")
	}
	Do(t, rc, rc.B().Hset().Key(key).FieldValue().FieldValue("f", "1").Build())
	Do(t, rc, rc.B().Pexpire().Key(key).Milliseconds(60000).Build())
	if !Exists(t, rc, key) || HGetAll(t, rc, key)["f"] != "1" {
		t.Errorf("HSET then EXISTS %v, HGETALL %v", Exists(t, rc, key), HGetAll(t, rc, key))
	}
	if ttl := PTTL(t, rc, key); ttl <= 0 || ttl > 60000 {
		t.Errorf("PTTL %d, want (0, 60000]", ttl)
	}
	before, err := CommandCalls(context.Background(), rc, "hset")
	if err != nil || before < 1 {
		t.Errorf("CommandCalls(hset) = %d, %v; want at least 1", before, err)
	}

	msgs := srv.Listen(t, ch)
	if n := NumSub(t, rc, ch); n != 1 {
		t.Errorf("NumSub = %d after Listen, want 1", n)
	}
	if n := ShardNumSub(t, rc, ch); n != 0 {
		t.Errorf("ShardNumSub = %d, want 0", n)
	}
	for _, m := range []string{"x", "y"} {
		Do(t, rc, rc.B().Publish().Channel(ch).Message(m).Build())
	}
	if got := Published(t, rc, ch, msgs); !slices.Equal(got, []string{"x", "y"}) {
		t.Errorf("Published = %q, want [x y]", got)
	}
	if got := Published(t, rc, ch, msgs); len(got) != 0 {
		t.Errorf("Published again = %q, want none", got)
	}

	killed, err := KillSubscribed(context.Background(), rc)
	if err != nil || killed < 1 {
		t.Errorf("KillSubscribed = %d, %v; want at least the listener's connection", killed, err)
	}
}

func TestOccupancyAndPeak(t *testing.T) {
	var o Occupancy
	leaveA := o.Enter(2)
	leaveB := o.Enter(1)
	leaveA()
	leaveC := o.Enter(1)
	leaveB()
	leaveC()
	if o.Most() != 3 || o.Entries() != 3 {
		t.Errorf("most %d, entries %d; want 3, 3", o.Most(), o.Entries())
	}
	o.Enter(1)()
	if o.Most() != 3 {
		t.Errorf("most %d after all left and one entered alone; want 3", o.Most())
	}
	var p Peak
	var wg sync.WaitGroup
	for i := range 100 {
		wg.Go(func() { p.Note(int64(i)) })
	}
	wg.Wait()
	if p.Load() != 99 {
		t.Errorf("peak %d, want 99", p.Load())
	}
}

func TestRWOverlap(t *testing.T) {
	var o RWOverlap
	r1, r2 := o.EnterRead(), o.EnterRead()
	if o.Violations() != 0 || o.MaxShared() != 2 {
		t.Fatalf("two readers: %d violations, %d shared; want 0, 2", o.Violations(), o.MaxShared())
	}
	w := o.EnterWrite()
	if o.Violations() != 1 {
		t.Fatalf("a writer among readers: %d violations, want 1", o.Violations())
	}
	r3 := o.EnterRead()
	if o.Violations() != 2 {
		t.Fatalf("a reader while a writer is inside: %d violations, want 2", o.Violations())
	}
	r1()
	r2()
	r3()
	w()
	w = o.EnterWrite()
	w()
	if reads, writes := o.Entries(); o.Violations() != 2 || reads != 3 || writes != 2 {
		t.Errorf("a writer alone: %d violations, %d/%d entries; want 2, 3/2", o.Violations(), reads, writes)
	}
}
