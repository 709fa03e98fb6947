package javapeer

import (
	"context"
	"maps"
	"regexp"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/goredisson/goredisson/internal/redistest"
)

func TestParseReply(t *testing.T) {
	cases := []struct {
		line string
		id   uint64
		want Reply
		ok   bool
	}{
		{"7 ok true 1234", 7, Reply{OK: true, Value: "true", Elapsed: 1234 * time.Microsecond}, true},
		{"8 err java.lang.IllegalMonitorStateException attempt to unlock lock 55", 8,
			Reply{ErrClass: "java.lang.IllegalMonitorStateException", Err: "java.lang.IllegalMonitorStateException attempt to unlock lock", Elapsed: 55 * time.Microsecond}, true},
		{"9 err java.lang.NullPointerException 3", 9, Reply{ErrClass: "java.lang.NullPointerException", Err: "java.lang.NullPointerException", Elapsed: 3 * time.Microsecond}, true},
		{"ready", 0, Reply{}, false},
		{"x ok true 1", 0, Reply{}, false},
		{"1 ok a b 1", 0, Reply{}, false},
		{"1 maybe a 1", 0, Reply{}, false},
	}
	for _, c := range cases {
		id, r, ok := parseReply(c.line)
		if ok != c.ok || id != c.id || r != c.want {
			t.Errorf("parseReply(%q) = %d, %+v, %v; want %d, %+v, %v", c.line, id, r, ok, c.id, c.want, c.ok)
		}
	}
}

var uuidRE = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)

// TestSmoke locks from a real Java Redisson and checks the Redis layout with raw commands.
func TestSmoke(t *testing.T) {
	for _, v := range KnownVersions {
		t.Run("redisson"+v, func(t *testing.T) {
			t.Parallel()
			jar := JarPath(t, v)
			srv := redistest.StartProcess(t, redistest.ProcessOptions{})
			addr, rdb := srv.Addr, srv.Client(t)
			const watchdog = 1500 * time.Millisecond
			p := Start(t, jar, "redis://"+addr, WithWatchdog(watchdog))
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			t.Logf("%s: Redisson %s, JVM start to ready %v", jar, p.Must(t, ctx, "", "version"), p.StartupTime())
			if got := p.Must(t, ctx, "", "ping"); got != "pong" {
				t.Fatalf("ping = %q", got)
			}
			if got, want := p.Must(t, ctx, "", "features"), ExpectedFeatures(v); got != want {
				t.Fatalf("Redisson %s features = %s; the table (versions.go) says %s", v, got, want)
			}

			id, err := p.ClientID(ctx)
			if err != nil || !uuidRE.MatchString(id) {
				t.Fatalf("clientid = %q, %v; want a lowercase UUID", id, err)
			}
			tidA := p.Must(t, ctx, "A", "threadid")
			tidB := p.Must(t, ctx, "B", "threadid")
			if tidA == tidB || p.Must(t, ctx, "A", "threadid") != tidA {
				t.Fatalf("thread ids A=%s B=%s: want distinct and stable per owner", tidA, tidB)
			}

			const name = "smoke:lock"
			if got := p.Must(t, ctx, "A", "lock", name); got != "true" {
				t.Fatalf("A lock = %q", got)
			}
			holder := id + ":" + tidA
			assertHash(t, rdb, name, map[string]string{holder: "1"})
			if pttl := redistest.PTTL(t, rdb, name); pttl <= 0 || pttl > watchdog.Milliseconds() || pttl < watchdog.Milliseconds()-500 {
				t.Fatalf("PTTL %s = %d; want ≈ watchdog %d", name, pttl, watchdog.Milliseconds())
			}

			if r, err := p.Do(ctx, "B", "trylock", name, "0", "-1"); err != nil || !r.OK || r.Bool() {
				t.Fatalf("B trylock 0 = %v, %v; want ok false", r, err)
			}
			if !expectBool(t, p, ctx, "A", "isheld", name) || expectBool(t, p, ctx, "B", "isheld", name) || !expectBool(t, p, ctx, "B", "islocked", name) {
				t.Fatal("isheld/islocked disagree with the hash")
			}
			if got := p.Must(t, ctx, "A", "holdcount", name); got != "1" {
				t.Fatalf("A holdcount = %s", got)
			}
			if r, err := p.Do(ctx, "B", "unlock", name); err != nil || r.OK || r.ErrClass != "java.lang.IllegalMonitorStateException" {
				t.Fatalf("B unlock = %v, %v; want IllegalMonitorStateException", r, err)
			}

			// The watchdog keeps the lock past its first TTL: held, with a TTL, at every look
			// until then.
			for end := time.Now().Add(watchdog + 700*time.Millisecond); time.Now().Before(end); {
				assertHash(t, rdb, name, map[string]string{holder: "1"})
				if pttl := redistest.PTTL(t, rdb, name); pttl <= 0 {
					t.Fatalf("PTTL within a watchdog period and a bit = %d; want renewed", pttl)
				}
				time.Sleep(100 * time.Millisecond)
			}

			// B blocks in lock() while A holds it; A's unlock wakes it (pub/sub), replies match by id.
			bDone := make(chan Reply, 1)
			go func() {
				r, err := p.Do(ctx, "B", "lock", name)
				if err != nil {
					r = Reply{Err: err.Error()}
				}
				bDone <- r
			}()
			ch := "redisson_lock__channel:{" + name + "}"
			if !redistest.Poll(10*time.Second, 10*time.Millisecond, func() bool { return redistest.NumSub(t, rdb, ch) == 1 }) {
				t.Fatalf("B never subscribed to %s", ch)
			}
			select {
			case r := <-bDone:
				t.Fatalf("B lock returned while A holds the lock: %v", r)
			default:
			}
			if got := p.Must(t, ctx, "A", "unlock", name); got != "-" {
				t.Fatalf("A unlock = %q", got)
			}
			select {
			case r := <-bDone:
				if !r.Bool() {
					t.Fatalf("B lock = %v", r)
				}
				t.Logf("B waited %v in lock()", r.Elapsed)
			case <-time.After(5 * time.Second):
				t.Fatal("B lock not woken by A unlock")
			}
			assertHash(t, rdb, name, map[string]string{id + ":" + tidB: "1"})
			p.Must(t, ctx, "B", "unlock", name)

			if redistest.Exists(t, rdb, name) {
				t.Fatalf("%s exists after unlock", name)
			}
			if got := p.Must(t, ctx, "A", "incr", "smoke:counter"); got != "1" {
				t.Fatalf("incr = %s", got)
			}
		})
	}
}

func expectBool(t *testing.T, p *Peer, ctx context.Context, owner, cmd, name string) bool {
	t.Helper()
	return p.Must(t, ctx, owner, cmd, name) == "true"
}

func assertHash(t *testing.T, rdb rueidis.Client, key string, want map[string]string) {
	t.Helper()
	if got := redistest.HGetAll(t, rdb, key); !maps.Equal(got, want) {
		t.Fatalf("HGETALL %s = %v; want %v", key, got, want)
	}
}
