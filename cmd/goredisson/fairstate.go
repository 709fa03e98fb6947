package main

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/rueidis"

	"github.com/goredisson/goredisson/internal/keys"
)

// queued is one waiter in a fair lock's queue, as inspect reports it.
type queued struct {
	Position     int    `json:"position"` // 1 is next
	Field        string `json:"field"`
	ClientID     string `json:"client_id"`
	OwnerID      string `json:"owner_id"`
	DeadlineMs   *int64 `json:"deadline_ms"`    // epoch ms; null when the timeout set has none
	DeadlineInMs *int64 `json:"deadline_in_ms"` // deadline less the server's time; negative: passed
	Channel      string `json:"channel"`        // the waiter's own wake-up channel
}

// fairSnapshot reads a fair lock's queue, its waiters' deadlines and the server's time at
// one moment. It writes nothing.
var fairSnapshot = newReadScript(`
local q = redis.call('LRANGE', KEYS[1], 0, -1)
local d = {}
for i = 1, #q do
	d[i] = redis.call('ZSCORE', KEYS[2], q[i]) or ''
end
local t = redis.call('TIME')
return {q, d, t[1], t[2]}`)

// readFairQueue fills st.Queue from the keys of a fair lock named st.Name (Redisson's
// RFairLock, goredisson's NewFairLock), and marks st as that variant when either key exists.
func readFairQueue(ctx context.Context, rc rueidis.Client, st *lockState) error {
	qk, zk := keys.FairQueue(st.Name), keys.FairTimeout(st.Name)
	reply, err := fairSnapshot.Exec(ctx, rc, []string{qk, zk}, nil).ToArray()
	if err == nil && len(reply) != 4 {
		err = fmt.Errorf("unexpected reply of %d elements", len(reply))
	}
	if err != nil {
		return fmt.Errorf("read %s and %s (LRANGE, ZSCORE, TIME in a script): %w", qk, zk, err)
	}
	fields, err := reply[0].AsStrSlice()
	if err != nil {
		return fmt.Errorf("read %s: %w", qk, err)
	}
	scores, err := reply[1].AsStrSlice()
	if err != nil {
		return fmt.Errorf("read %s: %w", zk, err)
	}
	sec, err1 := reply[2].AsInt64()
	usec, err2 := reply[3].AsInt64()
	if err1 != nil || err2 != nil {
		return fmt.Errorf("read TIME: %v %v", err1, err2)
	}
	now := sec*1000 + usec/1000
	zcard, err := rc.Do(ctx, rc.B().Zcard().Key(zk).Build()).AsInt64()
	if err != nil {
		return fmt.Errorf("ZCARD %s: %w", zk, err)
	}
	if len(fields) == 0 && zcard == 0 {
		return nil
	}
	st.Variant = variantFair
	st.Queue = []queued{}
	stale := 0
	for i, f := range fields {
		w := queued{Position: i + 1, Field: f, Channel: keys.FairWaiterChannel(st.Name, f)}
		if m := holderField.FindStringSubmatch(f); m != nil {
			w.ClientID, w.OwnerID = m[1], m[2]
		}
		if d, err := strconv.ParseFloat(scores[i], 64); err == nil {
			ms, in := int64(d), int64(d)-now
			w.DeadlineMs, w.DeadlineInMs = &ms, &in
			if in <= 0 {
				stale++
			}
		}
		st.Queue = append(st.Queue, w)
	}
	st.Notes = append(st.Notes, fmt.Sprintf(
		"a fair lock (Redisson's RFairLock, goredisson's NewFairLock): %d waiting in %s, each with a deadline in %s; a release wakes the first only, on its own channel",
		len(fields), qk, zk))
	if stale > 0 {
		st.Notes = append(st.Notes, fmt.Sprintf(
			"%d waiter(s) past their deadline: a waiter that died; the next script on the lock drops them once they are first", stale))
	}
	if int(zcard) != len(fields) {
		st.Notes = append(st.Notes, fmt.Sprintf("%s has %d members for %d queued waiters: the two keys disagree", zk, zcard, len(fields)))
	}
	return nil
}

// queueText renders a fair lock's queue for a person.
func (st *lockState) queueText() string {
	if st.Queue == nil {
		return ""
	}
	s := fmt.Sprintf("  queue:    %s (first is woken by the next release)\n", plural(int64(len(st.Queue)), "waiter", "waiters"))
	for _, w := range st.Queue {
		who := w.Field
		if w.ClientID != "" {
			who = "client " + w.ClientID + "  owner " + w.OwnerID
		}
		deadline := "no deadline"
		if w.DeadlineMs != nil {
			in := time.Duration(*w.DeadlineInMs) * time.Millisecond
			when := "in " + in.String()
			if in <= 0 {
				when = "passed " + (-in).String() + " ago"
			}
			deadline = fmt.Sprintf("deadline %s (%s)", time.UnixMilli(*w.DeadlineMs).UTC().Format(time.RFC3339Nano), when)
		}
		s += fmt.Sprintf("    %d. %s  %s\n", w.Position, who, deadline)
	}
	return s
}
