package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/redis/rueidis"
)

const inspectGroupHelp = `
Groups (MultiLock, RedLock): --group reads the NAMEs as the locks of one group, each
NAME@HOST:PORT on its own server (a NAME without @ is on the --redis server), and
--servers H1:P1,H2:P2,... puts each NAME on every one of those servers (a RedLock is
usually one name on 3 or 5 servers); --servers implies --group. Each lock is shown as
above, after a summary: how many locks are held, and the most of them held by one owner
id, against a RedLock's majority (n/2+1) and a MultiLock's all. Every server's lock has
its own client id (one Redisson or rlock Client per server), so a group's holder shows as
the same owner id (Java thread id or goredisson owner) under different client ids; two
processes can use the same owner id, so this is a hint, not a proof. --json prints
{"group": {"size", "held", "owner_id", "owner_held", "majority", "all", "members":
[{"server", "lock": <the object above>}]}}; the exit code is 3 when no lock is held.`

// groupMember is one lock of a group as inspect prints it.
type groupMember struct {
	Server string     `json:"server"`
	Lock   *lockState `json:"lock"`
}

// groupState is what inspect --group prints; its JSON form is documented in inspect's help.
type groupState struct {
	Size      int           `json:"size"`
	Held      int           `json:"held"`       // locks with a holder
	OwnerID   string        `json:"owner_id"`   // the owner id holding the most locks, "" when none
	OwnerHeld int           `json:"owner_held"` // how many
	Majority  bool          `json:"majority"`   // OwnerHeld >= Size/2+1
	All       bool          `json:"all"`        // OwnerHeld == Size
	Members   []groupMember `json:"members"`
}

// groupMembers splits the inspect arguments into (server, name) pairs: each NAME on every
// server of servers when it is given, else NAME@HOST:PORT or NAME on def.
func groupMembers(names []string, servers, def string) (addrs, locks []string, err error) {
	for _, name := range names {
		if servers != "" {
			for _, s := range strings.Split(servers, ",") {
				addrs, locks = append(addrs, strings.TrimSpace(s)), append(locks, name)
			}
			continue
		}
		n, s, found := strings.Cut(name, "@")
		if !found {
			s = def
		}
		if n == "" || s == "" {
			return nil, nil, usagef("bad group member %q: want NAME or NAME@HOST:PORT", name)
		}
		addrs, locks = append(addrs, s), append(locks, n)
	}
	for _, s := range addrs {
		if _, err := parseRedis(s); err != nil {
			return nil, nil, usagef("%v", err)
		}
	}
	return addrs, locks, nil
}

// inspectGroup reads every member of a group, each on its own server, and prints the group.
func (a *app) inspectGroup(ctx context.Context, out io.Writer, names []string, servers string, asJSON bool) error {
	t, _, err := a.target(defaultRedis)
	if err != nil {
		return err
	}
	addrs, locks, err := groupMembers(names, servers, t.raw)
	if err != nil {
		return err
	}
	clients := map[string]rueidis.Client{}
	defer func() {
		for _, rc := range clients {
			rc.Close()
		}
	}()
	g := &groupState{Size: len(locks)}
	for i, name := range locks {
		rc := clients[addrs[i]]
		if rc == nil {
			opt, _ := parseRedis(addrs[i])
			rc, err = a.connect(ctx, redisTarget{raw: addrs[i], source: "the group", opt: opt,
				display: strings.Join(opt.InitAddress, ",")})
			if err != nil {
				return err
			}
			clients[addrs[i]] = rc
		}
		st, err := readLock(ctx, rc, name)
		if err != nil {
			return err
		}
		display := addrs[i]
		if opt, err := parseRedis(addrs[i]); err == nil {
			display = strings.Join(opt.InitAddress, ",") // no password in the output
		}
		g.Members = append(g.Members, groupMember{Server: display, Lock: st})
	}
	g.summarize()
	if asJSON {
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		if err := enc.Encode(struct {
			Group *groupState `json:"group"`
		}{g}); err != nil {
			return err
		}
	} else {
		fmt.Fprint(out, g.text())
	}
	if g.Held == 0 {
		return silent(exitNotFound)
	}
	return nil
}

// summarize counts the locks held, and the most held by one owner id.
func (g *groupState) summarize() {
	byOwner := map[string]int{}
	for _, m := range g.Members {
		if len(m.Lock.Holders) > 0 {
			g.Held++
		}
		seen := map[string]bool{}
		for _, h := range m.Lock.Holders {
			if !seen[h.OwnerID] {
				seen[h.OwnerID] = true
				byOwner[h.OwnerID]++
			}
		}
	}
	owners := make([]string, 0, len(byOwner))
	for o := range byOwner {
		owners = append(owners, o)
	}
	sort.Strings(owners)
	for _, o := range owners {
		if byOwner[o] > g.OwnerHeld {
			g.OwnerID, g.OwnerHeld = o, byOwner[o]
		}
	}
	g.Majority = g.OwnerHeld >= g.Size/2+1
	g.All = g.OwnerHeld == g.Size
}

func (g *groupState) text() string {
	var b strings.Builder
	fmt.Fprintf(&b, "group of %d locks: %d held\n", g.Size, g.Held)
	if g.OwnerHeld > 0 {
		yes := map[bool]string{true: "yes", false: "no"}
		fmt.Fprintf(&b, "  owner %s holds %d of %d: RedLock majority (%d): %s; MultiLock (all): %s\n",
			g.OwnerID, g.OwnerHeld, g.Size, g.Size/2+1, yes[g.Majority], yes[g.All])
	}
	for i, m := range g.Members {
		fmt.Fprintf(&b, "\nlock %d of %d, on %s:\n", i+1, g.Size, m.Server)
		for _, line := range strings.SplitAfter(m.Lock.text(), "\n") {
			if line != "" {
				b.WriteString("  " + line)
			}
		}
	}
	return b.String()
}
