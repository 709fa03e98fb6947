package main

import (
	"context"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/rueidis"

	"github.com/goredisson/goredisson/internal/keys"
)

// Kinds of synchronizer that inspect reports. A latch and a semaphore are both a string key
// holding an integer: only who waits on which channel tells them apart.
const (
	kindLatch           = "countdown_latch"     // Redisson RCountDownLatch: the count
	kindSemaphore       = "semaphore"           // Redisson RSemaphore: the available permits
	kindExpirable       = "expirable_semaphore" // Redisson RPermitExpirableSemaphore: permits held in "{NAME}:timeout"
	kindLatchOrSemphore = "latch_or_semaphore"  // an integer string nobody waits on
)

// neverExpires is the score of a permit held without a lease.
const neverExpires = 922337203685477

// permit is one permit held from an expirable semaphore.
type permit struct {
	ID      string `json:"id"`       // 32 hex digits, as Java and goredisson show it
	LeaseMS int64  `json:"lease_ms"` // remaining lease by inspect's clock; -1 when it never expires
	Expired bool   `json:"expired"`  // its lease ran out; the next acquire or count reclaims it
}

func isInteger(m rueidis.RedisMessage) bool {
	v, err := m.AsStrSlice()
	if err != nil || len(v) != 1 {
		return false
	}
	_, err = strconv.ParseInt(v[0], 10, 64)
	return err == nil
}

// readSynchronizer fills st for a name whose key is an integer string, or that has held
// permits in "{NAME}:timeout": fields is the string's value (empty when there is no key).
func readSynchronizer(ctx context.Context, rc rueidis.Client, st *lockState, fields rueidis.RedisMessage, held []rueidis.ZScore) error {
	if v, err := fields.AsStrSlice(); err == nil && len(v) == 1 {
		n, _ := strconv.ParseInt(v[0], 10, 64)
		st.Count = &n
	}
	latch, semaphore := keys.LatchChannel(st.Name), keys.SemaphoreChannel(st.Name)
	if len(held) > 0 {
		st.Kind, st.Channel = kindExpirable, semaphore
		now := time.Now().UnixMilli()
		for _, z := range held {
			p := permit{ID: hex.EncodeToString([]byte(z.Member)), LeaseMS: -1}
			if z.Score != neverExpires {
				p.LeaseMS = int64(z.Score) - now
				p.Expired = p.LeaseMS <= 0
			}
			st.Permits = append(st.Permits, p)
		}
		return readSubscribers(ctx, rc, st)
	}
	// An integer string: a latch or a semaphore. The channel its waiters listen on tells.
	st.Channel = latch
	if err := readSubscribers(ctx, rc, st); err != nil {
		return err
	}
	if st.Subscribers.count() > 0 {
		st.Kind = kindLatch
		return nil
	}
	st.Channel = semaphore
	if err := readSubscribers(ctx, rc, st); err != nil {
		return err
	}
	st.Kind = kindSemaphore
	if st.Subscribers.count() == 0 {
		st.Kind = kindLatchOrSemphore
		st.Notes = append(st.Notes, fmt.Sprintf(
			"an integer with nobody waiting on %s or %s: a countdown latch (its count) or a semaphore (its available permits)",
			latch, semaphore))
	}
	return nil
}

// count returns the subscribers of both kinds.
func (s subscribers) count() int64 {
	var n int64
	for _, c := range []*int64{s.Classic, s.Sharded} {
		if c != nil {
			n += *c
		}
	}
	return n
}

// syncText writes the lines of a synchronizer for a person.
func (st *lockState) syncText(b *strings.Builder) {
	count := "none (no key)"
	if st.Count != nil {
		count = strconv.FormatInt(*st.Count, 10)
	}
	switch st.Kind {
	case kindLatch:
		fmt.Fprintf(b, "%s: countdown latch (Redisson RCountDownLatch)\n  count:    %s\n", st.Name, count)
	case kindSemaphore:
		fmt.Fprintf(b, "%s: semaphore (Redisson RSemaphore)\n  available permits: %s\n", st.Name, count)
	case kindLatchOrSemphore:
		fmt.Fprintf(b, "%s: countdown latch or semaphore (an integer string)\n  value:    %s\n", st.Name, count)
	case kindExpirable:
		fmt.Fprintf(b, "%s: permit-expirable semaphore (Redisson RPermitExpirableSemaphore)\n", st.Name)
		fmt.Fprintf(b, "  available permits: %s\n  held permits: %d (in %s)\n", count, len(st.Permits), keys.PermitTimeouts(st.Name))
		for _, p := range st.Permits {
			switch {
			case p.LeaseMS == -1:
				fmt.Fprintf(b, "    %s  never expires\n", p.ID)
			case p.Expired:
				fmt.Fprintf(b, "    %s  expired %v ago (not yet reclaimed)\n", p.ID, time.Duration(-p.LeaseMS)*time.Millisecond)
			default:
				fmt.Fprintf(b, "    %s  expires in %v\n", p.ID, time.Duration(p.LeaseMS)*time.Millisecond)
			}
		}
	}
}
