package main

import (
	"context"
	"errors"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/goredisson/goredisson/internal/keys"
	"github.com/goredisson/goredisson/internal/redistest"
	"github.com/goredisson/goredisson/internal/redistest/rlocktest"
	"github.com/goredisson/goredisson/rlock"
)

func TestForceUnlockYes(t *testing.T) {
	srv := redistest.Shared(t)
	rc := srv.Client(t)
	name := unique("order:")
	javaLock(t, rc, name)
	msgs := srv.Listen(t, keys.LockChannel(name))
	eventually(t, "the subscription", func() bool {
		_, got := inspectJSON(t, srv.Addr, name)
		return *got.Locks[0].Subscribers.Classic == 1
	})

	t.Run("held", func(t *testing.T) {
		code, out, errOut := cli(t, nil, "--redis", srv.Addr, "force-unlock", "--yes", name)
		if code != exitOK {
			t.Fatalf("exit %d, want 0", code)
		}
		if !strings.Contains(out, "client "+javaClient+"  owner 57  hold count 1") ||
			!strings.Contains(out, "force-unlocked "+name+": key deleted, \"0\" published on redisson_lock__channel:{"+name+"}") {
			t.Errorf("stdout %q", out)
		}
		if strings.Contains(errOut, "[y/N]") {
			t.Errorf("--yes asked anyway: %q", errOut)
		}
		if redistest.Exists(t, rc, name) {
			t.Error("the lock still exists")
		}
		if got := redistest.Published(t, rc, keys.LockChannel(name), msgs); !slices.Equal(got, []string{"0"}) {
			t.Errorf("published %q, want one \"0\" as Redisson does", got)
		}
	})

	t.Run("again: nothing to unlock", func(t *testing.T) {
		code, out, _ := cli(t, nil, "--redis", srv.Addr, "force-unlock", "--yes", name)
		if code != exitNotFound || !strings.Contains(out, "nothing to unlock: "+name+" does not exist") {
			t.Errorf("second force-unlock: exit %d, %q", code, out)
		}
	})
}

func TestForceUnlockConfirmation(t *testing.T) {
	srv := redistest.Shared(t)
	rc := srv.Client(t)
	name := unique("order:")
	javaLock(t, rc, name)

	for _, answer := range []string{"n\n", "\n", "nope\n", "maybe"} {
		code, _, errOut := cli(t, strings.NewReader(answer), "--redis", srv.Addr, "force-unlock", name)
		if code != exitDeclined {
			t.Errorf("answer %q: exit %d, want %d", answer, code, exitDeclined)
		}
		if !strings.Contains(errOut, "Force-unlock "+name+"? Its 1 holder will keep running") ||
			!strings.Contains(errOut, "[y/N]") || !strings.Contains(errOut, "declined: nothing changed") {
			t.Errorf("answer %q: stderr %q", answer, errOut)
		}
		if !redistest.Exists(t, rc, name) {
			t.Fatalf("answer %q deleted the lock", answer)
		}
	}
	code, _, errOut := cli(t, strings.NewReader(""), "--redis", srv.Addr, "force-unlock", name)
	if code != exitDeclined || !strings.Contains(errOut, "no answer (stdin closed)") {
		t.Errorf("closed stdin: exit %d, stderr %q", code, errOut)
	}
	if !redistest.Exists(t, rc, name) {
		t.Fatal("closed stdin deleted the lock")
	}

	code, out, _ := cli(t, strings.NewReader("Y\n"), "--redis", srv.Addr, "force-unlock", name)
	if code != exitOK || !strings.Contains(out, "force-unlocked "+name) {
		t.Fatalf("answer Y: exit %d, %q", code, out)
	}
	if redistest.Exists(t, rc, name) {
		t.Error("the lock survived a yes")
	}
}

// answerAfter is stdin whose first read runs f, as if the lock changed while a person
// read the question, then answers.
type answerAfter struct {
	f      func()
	answer io.Reader
}

func (r *answerAfter) Read(p []byte) (int, error) {
	if r.f != nil {
		r.f()
		r.f = nil
	}
	return r.answer.Read(p)
}

func TestForceUnlockHoldersChanged(t *testing.T) {
	srv := redistest.Shared(t)
	rc := srv.Client(t)
	name := unique("order:")
	javaLock(t, rc, name)
	other := "0b8f3c1e-7a2d-4e5f-8c9b-1d2e3f4a5b6c:3"
	in := &answerAfter{answer: strings.NewReader("y\n"), f: func() {
		redistest.Do(t, rc, rc.B().Del().Key(name).Build())
		redistest.Do(t, rc, rc.B().Hset().Key(name).FieldValue().FieldValue(other, "1").Build())
		redistest.Do(t, rc, rc.B().Pexpire().Key(name).Milliseconds(30000).Build())
	}}
	code, _, errOut := cli(t, in, "--redis", srv.Addr, "force-unlock", name)
	if code != exitFailure || !strings.Contains(errOut, "the lock changed hands while you answered") {
		t.Errorf("exit %d, stderr %q", code, errOut)
	}
	if n, _ := redistest.Do(t, rc, rc.B().Hexists().Key(name).Field(other).Build()).AsBool(); !n {
		t.Error("the new holder was unlocked without confirmation")
	}
}

func TestForceUnlockGoHolder(t *testing.T) {
	srv := redistest.Shared(t)
	ctx := context.Background()
	lc := rlocktest.NewClient(t, srv.Client(t), rlock.Options{})
	name := unique("lock:stock:")
	l := lc.NewLock(name)
	octx := rlock.NewOwner(ctx)
	if err := l.Lock(octx); err != nil {
		t.Fatal(err)
	}
	code, out, _ := cli(t, strings.NewReader("yes\n"), "--redis", srv.Addr, "force-unlock", name)
	if code != exitOK || !strings.Contains(out, "client "+lc.ID()) {
		t.Fatalf("exit %d, %q", code, out)
	}
	if err := l.Unlock(octx); !errors.Is(err, rlock.ErrNotHeld) {
		t.Errorf("the holder's Unlock after force-unlock: %v, want ErrNotHeld", err)
	}
}

func TestForceUnlockNotALock(t *testing.T) {
	srv := redistest.Shared(t)
	rc := srv.Client(t)
	str := unique("string:")
	redistest.Do(t, rc, rc.B().Set().Key(str).Value("precious").Build())
	code, out, _ := cli(t, nil, "--redis", srv.Addr, "force-unlock", "--yes", str)
	if code != exitNotFound || !strings.Contains(out, "is not a Redisson RLock; force-unlock never deletes other keys") {
		t.Errorf("exit %d, %q", code, out)
	}
	if v, _ := redistest.Do(t, rc, rc.B().Get().Key(str).Build()).ToString(); v != "precious" {
		t.Errorf("the string key was touched: %q", v)
	}
}

// A fair lock and a read-write lock are force-unlocked through the handle of their kind:
// the fair lock's first waiter is woken on its own channel (its queue is kept), and the
// read-write lock is deleted by the handle of its mode, which wakes its waiters. In both
// cases a waiter takes the lock long before the holder's lease (a minute) ends, and the
// holder's Unlock then reports ErrNotHeld.
func TestForceUnlockFairAndReadWrite(t *testing.T) {
	srv := redistest.Shared(t)
	ctx := context.Background()
	holders := rlocktest.NewClient(t, srv.Client(t), rlock.Options{})
	waiters := rlocktest.NewClient(t, srv.Client(t), rlock.Options{})
	for _, k := range []struct {
		kind, mode string
		holder     func(name string) *rlock.Lock
		waiter     func(name string) *rlock.Lock
	}{
		{"fair", "published to the first waiter", holders.NewFairLock, waiters.NewFairLock},
		{"write", "(write mode)",
			func(name string) *rlock.Lock { return holders.NewReadWriteLock(name).WriteLock() },
			func(name string) *rlock.Lock { return waiters.NewReadWriteLock(name).ReadLock() }},
		{"read", "(read mode)",
			func(name string) *rlock.Lock { return holders.NewReadWriteLock(name).ReadLock() },
			func(name string) *rlock.Lock { return waiters.NewReadWriteLock(name).WriteLock() }},
	} {
		t.Run(k.kind, func(t *testing.T) {
			name := unique("lock:" + k.kind + ":")
			hl, howner := k.holder(name), rlock.NewOwner(ctx)
			if err := hl.LockFor(howner, time.Minute); err != nil {
				t.Fatal(err)
			}
			wl, wowner := k.waiter(name), rlock.NewOwner(ctx)
			wctx, cancel := context.WithTimeout(wowner, 30*time.Second)
			defer cancel()
			done := make(chan error, 1)
			go func() { done <- wl.Lock(wctx) }()
			eventually(t, "the waiter waiting", func() bool {
				_, got := inspectJSON(t, srv.Addr, name)
				l := got.Locks[0]
				subs := int64(0)
				if l.Subscribers.Classic != nil {
					subs = *l.Subscribers.Classic
				}
				return len(l.Queue) == 1 || subs == 1
			})
			code, out, errOut := cli(t, nil, "--redis", srv.Addr, "force-unlock", "--yes", name)
			if code != exitOK || !strings.Contains(out, "force-unlocked "+name+": key deleted, ") || !strings.Contains(out, k.mode) {
				t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errOut)
			}
			select {
			case err := <-done:
				if err != nil {
					t.Fatalf("the waiter's Lock after the force-unlock: %v", err)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("the waiter still waits 10 s after the force-unlock")
			}
			if err := hl.Unlock(howner); !errors.Is(err, rlock.ErrNotHeld) {
				t.Errorf("the holder's Unlock after force-unlock: %v, want ErrNotHeld", err)
			}
			if err := wl.Unlock(wowner); err != nil {
				t.Errorf("the waiter's Unlock: %v", err)
			}
		})
	}
}
