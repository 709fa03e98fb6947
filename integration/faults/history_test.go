package faults

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/redis/rueidis"
)

// history records what each owner was told, on this process's monotonic clock, and checks
// it for overlapping holds: no two owners may hold at once unless a loss signal explains it.
type history struct {
	mu     sync.Mutex
	start  time.Time
	events []event
}

type event struct {
	owner string
	kind  string // "acquired", "releasing", "lost"
	at    time.Duration
}

func newHistory() *history { return &history{start: time.Now()} }

func (h *history) add(owner, kind string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.events = append(h.events, event{owner, kind, time.Since(h.start)})
}

// hold is one owner's [acquired, end) interval; lost tells whether it ended by a loss
// signal rather than a release.
type hold struct {
	owner       string
	from, to    time.Duration
	endedByLoss bool
}

// overlaps returns every pair of overlapping holds, split into those a loss signal
// explains (one of the two holders was told it lost the lock) and violations.
func (h *history) overlaps() (explained, violations []string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	open := map[string]time.Duration{}
	var holds []hold
	end := time.Since(h.start)
	for _, e := range h.events {
		switch e.kind {
		case "acquired":
			open[e.owner] = e.at
		case "releasing", "lost":
			if from, ok := open[e.owner]; ok {
				holds = append(holds, hold{e.owner, from, e.at, e.kind == "lost"})
				delete(open, e.owner)
			}
		}
	}
	for o, from := range open {
		holds = append(holds, hold{o, from, end, false})
	}
	sort.Slice(holds, func(i, j int) bool { return holds[i].from < holds[j].from })
	for i := range holds {
		for j := i + 1; j < len(holds); j++ {
			a, b := holds[i], holds[j]
			if b.from >= a.to {
				break
			}
			desc := fmt.Sprintf("%s [%v,%v) overlaps %s [%v,%v)", a.owner, a.from, a.to, b.owner, b.from, b.to)
			if a.endedByLoss || b.endedByLoss {
				explained = append(explained, desc)
			} else {
				violations = append(violations, desc)
			}
		}
	}
	return explained, violations
}

// fencedWrite is a resource that accepts a write only with a token at least as new as
// every token it accepted before: the fencing check.
//
//	KEYS[1] highest accepted token; KEYS[2] the data; ARGV[1] token; ARGV[2] value
var fencedWrite = rueidis.NewLuaScript(`
local seen = tonumber(redis.call('get', KEYS[1]) or '0')
if tonumber(ARGV[1]) < seen then
	return 0
end
redis.call('set', KEYS[1], ARGV[1])
redis.call('set', KEYS[2], ARGV[2])
return 1
`)

// token returns a fencing token for a new hold of name: INCR of a counter, taken while
// holding the lock.
func token(ctx context.Context, rc rueidis.Client, name string) (int64, error) {
	return rc.Do(ctx, rc.B().Incr().Key("fence:"+name+":counter").Build()).AsInt64()
}

// write writes value to name's fenced resource with tok and reports whether it was
// accepted.
func write(ctx context.Context, rc rueidis.Client, name string, tok int64, value string) (bool, error) {
	n, err := fencedWrite.Exec(ctx, rc, []string{"fence:" + name + ":max", "fence:" + name + ":data"},
		[]string{fmt.Sprint(tok), value}).AsInt64()
	return n == 1, err
}
