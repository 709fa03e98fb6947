package redistest

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

var names atomic.Int64

// Name returns a key name that no other call in the test binary returns: the test's name,
// with "/" turned into ":", and a sequence number. Tests that share a server ([Shared]) use
// it for their lock names.
func Name(t testing.TB) string {
	return fmt.Sprintf("%s:%d", strings.ReplaceAll(t.Name(), "/", ":"), names.Add(1))
}

// Context returns a context that is cancelled after d, or when the test ends.
func Context(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// Poll calls cond every interval until it returns true or d has passed, and reports whether
// it returned true. cond runs on the caller's goroutine, so it may fail the test.
func Poll(d, interval time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(d)
	for {
		if cond() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(interval)
	}
}

// Overlap detects two owners inside one critical section at once. The zero value is ready
// for use, and it is safe for concurrent use.
type Overlap struct {
	inside     atomic.Int32
	violations atomic.Int64
	entries    atomic.Int64
}

// Enter marks an owner inside the section. It returns how many other owners were inside
// at that moment, which is a violation unless 0, and the function that marks the owner out.
func (o *Overlap) Enter() (others int, leave func()) {
	others = int(o.inside.Add(1)) - 1
	if others != 0 {
		o.violations.Add(1)
	}
	o.entries.Add(1)
	return others, func() { o.inside.Add(-1) }
}

// Violations returns how many entries found another owner inside.
func (o *Overlap) Violations() int64 { return o.violations.Load() }

// Entries returns how many times an owner entered.
func (o *Overlap) Entries() int64 { return o.entries.Load() }

// RWOverlap detects a read-write exclusion broken: a writer inside while anyone else is. Any
// number of readers may be inside together. The zero value is ready for use, and it is safe
// for concurrent use.
type RWOverlap struct {
	mu                     sync.Mutex
	readers, writers       int
	violations             int64
	readEntries, maxShared int64
	writeEntries           int64
}

// EnterRead marks a reader inside, a violation when a writer is, and returns the function
// that marks it out.
func (o *RWOverlap) EnterRead() (leave func()) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.writers > 0 {
		o.violations++
	}
	o.readers++
	o.readEntries++
	o.maxShared = max(o.maxShared, int64(o.readers))
	return func() { o.mu.Lock(); o.readers--; o.mu.Unlock() }
}

// EnterWrite marks a writer inside, a violation when anyone else is, and returns the
// function that marks it out.
func (o *RWOverlap) EnterWrite() (leave func()) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.writers > 0 || o.readers > 0 {
		o.violations++
	}
	o.writers++
	o.writeEntries++
	return func() { o.mu.Lock(); o.writers--; o.mu.Unlock() }
}

// Violations returns how many entries broke the exclusion.
func (o *RWOverlap) Violations() int64 { o.mu.Lock(); defer o.mu.Unlock(); return o.violations }

// Entries returns how many times a reader and a writer entered.
func (o *RWOverlap) Entries() (reads, writes int64) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.readEntries, o.writeEntries
}

// MaxShared returns the most readers seen inside at once.
func (o *RWOverlap) MaxShared() int64 { o.mu.Lock(); defer o.mu.Unlock(); return o.maxShared }

// SyncBuffer is a bytes.Buffer that goroutines may write concurrently, for instance the
// output of a logger or of a child process. The zero value is an empty buffer.
type SyncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

// Write appends p to the buffer.
func (s *SyncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

// WriteString appends v to the buffer.
func (s *SyncBuffer) WriteString(v string) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.WriteString(v)
}

// String returns what has been written so far.
func (s *SyncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// Peak records the highest of the values it is shown. The zero value is ready for use, and
// it is safe for concurrent use.
type Peak struct{ v atomic.Int64 }

// Note records v.
func (p *Peak) Note(v int64) {
	for m := p.v.Load(); v > m && !p.v.CompareAndSwap(m, v); m = p.v.Load() {
	}
}

// Load returns the highest value noted, 0 when none was.
func (p *Peak) Load() int64 { return p.v.Load() }

// Occupancy counts the permits held inside a section that a semaphore guards and records
// the most held at once. The zero value is ready for use, and it is safe for concurrent use.
type Occupancy struct {
	inside, entries atomic.Int64
	most            Peak
}

// Enter marks n permits inside and returns the function that marks them out.
func (o *Occupancy) Enter(n int64) (leave func()) {
	o.most.Note(o.inside.Add(n))
	o.entries.Add(1)
	return func() { o.inside.Add(-n) }
}

// Most returns the most permits that were inside at once.
func (o *Occupancy) Most() int64 { return o.most.Load() }

// Entries returns how many times Enter was called.
func (o *Occupancy) Entries() int64 { return o.entries.Load() }
