package main

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/redis/rueidis"

	"github.com/goredisson/goredisson/internal/keys"
)

// kindReadWrite is the kind of a hash in Redisson's RReadWriteLock layout, which Java's
// getReadWriteLock and goredisson's NewReadWriteLock both write: a "mode" field ("read" or
// "write"), reader fields "<client-uuid>:<owner-id>" and writer fields ending in ":write",
// each with its hold count.
const kindReadWrite = "read_write_lock"

// Roles of a read-write lock's holders.
const (
	roleReader = "reader"
	roleWriter = "writer"
)

// readReadWrite fills st from the fields (sorted in names) of a read-write lock's hash: its
// mode, and its readers and writer, each reader with the remaining TTL of each of its
// per-acquisition timeout keys ("{NAME}:<field>:rwlock_timeout:<k>"), by which a read
// release decides whether other readers still hold the lock. The channel becomes the
// read-write lock's, "redisson_rwlock:{NAME}".
func readReadWrite(ctx context.Context, rc rueidis.Client, st *lockState, fields map[string]string, names []string) error {
	st.Kind, st.Variant, st.Mode = kindReadWrite, variantReadWrite, fields["mode"]
	st.Channel = keys.ReadWriteChannel(st.Name)
	if st.Mode != "read" && st.Mode != "write" {
		st.Notes = append(st.Notes, fmt.Sprintf("mode %q is neither \"read\" nor \"write\": not written by Redisson or goredisson", st.Mode))
	}
	writers := 0
	for _, f := range names {
		if f == "mode" {
			continue
		}
		m := rwHolderField.FindStringSubmatch(f)
		n, err := strconv.ParseInt(fields[f], 10, 64)
		if m == nil || err != nil || n < 1 {
			st.Notes = append(st.Notes, fmt.Sprintf("field %q -> %q is not a holder of a read-write lock", f, fields[f]))
			continue
		}
		h := holder{Field: f, ClientID: m[1], OwnerID: m[2], HoldCount: n, Runtime: runtimeUnknown, RuntimeHint: runtimeHint(m[2]), Role: roleReader}
		if m[3] != "" {
			h.Role = roleWriter
			writers++
		} else if err := readTimeouts(ctx, rc, st, &h); err != nil {
			return err
		}
		st.Holders = append(st.Holders, h)
	}
	if writers > 1 {
		st.Notes = append(st.Notes, "more than one writer: a read-write lock has at most one")
	}
	if st.Mode == "write" && writers == 0 {
		st.Notes = append(st.Notes, "write mode without a writer field")
	}
	return nil
}

// readTimeouts reads the PTTL of each timeout key of reader h, and notes a reader with
// none alive: another reader's release ignores it and may delete the lock under it.
func readTimeouts(ctx context.Context, rc rueidis.Client, st *lockState, h *holder) error {
	prefix := keys.ReadTimeoutPrefix(st.Name, h.Field)
	cmds := make(rueidis.Commands, 0, h.HoldCount)
	for k := int64(1); k <= h.HoldCount && k <= 1000; k++ {
		cmds = append(cmds, rc.B().Pttl().Key(prefix+":"+strconv.FormatInt(k, 10)).Build())
	}
	alive := false
	h.ReadTimeoutsMillis = make([]int64, 0, len(cmds))
	for i, r := range rc.DoMulti(ctx, cmds...) {
		ms, err := r.AsInt64()
		if err != nil {
			return fmt.Errorf("PTTL %s:%d: %w", prefix, i+1, err)
		}
		h.ReadTimeoutsMillis = append(h.ReadTimeoutsMillis, ms)
		alive = alive || ms > 0 || ms == -1
	}
	if !alive {
		st.Notes = append(st.Notes, fmt.Sprintf(
			"reader %s has no live timeout key (%s:1…): another reader's release does not count it and may delete the lock", h.Field, prefix))
	}
	return nil
}

// rwHeader is the first line of a read-write lock's text.
func (st *lockState) rwHeader() string {
	return fmt.Sprintf("%s: read-write lock in %s mode (hash in Redisson RReadWriteLock layout: \"mode\", readers \"<client-uuid>:<owner-id>\", writer \"…:write\" -> hold count)\n",
		st.Name, st.Mode)
}

// rwHolderText is the text of one holder of a read-write lock.
func rwHolderText(h holder) string {
	s := fmt.Sprintf("    %s client %s  owner %s  hold count %d", h.Role, h.ClientID, h.OwnerID, h.HoldCount)
	if h.Role == roleReader {
		ttls := make([]string, len(h.ReadTimeoutsMillis))
		for i, ms := range h.ReadTimeoutsMillis {
			ttls[i] = fmtTTL(ms)
			if ms == -2 {
				ttls[i] = "gone"
			}
		}
		s += "  timeout keys " + strings.Join(ttls, ", ")
	}
	return s + "\n"
}
