package partition

import (
	"bufio"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// resource is what a lock protects: a store that takes writes from the lock's holders. With
// fencing it accepts a write only with a token at least as large as every token it has
// accepted (and, for an equal token, only from the hold that first used it): a holder that
// lost the lock and writes late is refused. Without fencing (token 0) it accepts every write.
// It records what it accepted, on the test process's clock, for the checker.
type resource struct {
	ln net.Listener

	mu       sync.Mutex
	max      int64
	maxHold  holdID
	accepted []write
	refused  int
	wg       sync.WaitGroup
}

// holdID names one hold: a client and its acquisition number.
type holdID struct {
	client string
	seq    int
}

// write is one accepted write.
type write struct {
	hold  holdID
	token int64
	at    time.Time
}

// startResource listens on addr (host only; the port is picked) until t ends.
func startResource(t *testing.T, host string) *resource {
	t.Helper()
	ln, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		t.Fatalf("resource: %v", err)
	}
	r := &resource{ln: ln}
	r.wg.Go(r.accept)
	t.Cleanup(func() {
		_ = ln.Close()
		r.wg.Wait()
	})
	return r
}

func (r *resource) addr() string { return r.ln.Addr().String() }

func (r *resource) accept() {
	var conns sync.WaitGroup
	defer conns.Wait()
	for {
		c, err := r.ln.Accept()
		if err != nil {
			return
		}
		conns.Go(func() { r.serve(c) })
	}
}

// serve answers lines "W client seq token" with "A" (accepted) or "R" (refused) until the
// client hangs up, or 2 minutes pass.
func (r *resource) serve(c net.Conn) {
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(2 * time.Minute))
	in := bufio.NewScanner(c)
	for in.Scan() {
		f := strings.Fields(in.Text())
		if len(f) != 4 || f[0] != "W" {
			return
		}
		seq, err1 := strconv.Atoi(f[2])
		tok, err2 := strconv.ParseInt(f[3], 10, 64)
		if err1 != nil || err2 != nil {
			return
		}
		reply := "R"
		if r.write(holdID{f[1], seq}, tok) {
			reply = "A"
		}
		if _, err := fmt.Fprintln(c, reply); err != nil {
			return
		}
	}
}

func (r *resource) write(h holdID, tok int64) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if tok != 0 {
		if tok < r.max || (tok == r.max && h != r.maxHold) {
			r.refused++
			return false
		}
		r.max, r.maxHold = tok, h
	}
	r.accepted = append(r.accepted, write{hold: h, token: tok, at: time.Now()})
	return true
}

// overlaps returns the pairs of holds whose accepted writes interleave: a write of one fell
// between the first and last accepted writes of another. Each is a violation of mutual
// exclusion that the resource let through.
func (r *resource) overlaps() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	type span struct{ from, to time.Time }
	spans := map[holdID]*span{}
	var order []holdID
	for _, w := range r.accepted {
		s := spans[w.hold]
		if s == nil {
			spans[w.hold] = &span{w.at, w.at}
			order = append(order, w.hold)
			continue
		}
		s.to = w.at
	}
	var out []string
	for i, a := range order {
		for _, b := range order[i+1:] {
			sa, sb := spans[a], spans[b]
			if a.client != b.client && sa.from.Before(sb.to) && sb.from.Before(sa.to) {
				out = append(out, fmt.Sprintf("%s#%d and %s#%d", a.client, a.seq, b.client, b.seq))
			}
		}
	}
	return out
}

// counts returns how many writes were accepted and refused.
func (r *resource) counts() (accepted, refused int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.accepted), r.refused
}
