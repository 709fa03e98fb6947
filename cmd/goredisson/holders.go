package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/redis/rueidis"

	"github.com/goredisson/goredisson/rlock"
)

// runtimeGo is the runtime of a holder whose client named its connection as rlock does.
const runtimeGo = "go"

// identifyHolders tells, for each holder of st still of unknown runtime, which process
// holds it: a goredisson Client names its connection "goredisson:<client id>" (rlock.New),
// so CLIENT LIST on the servers finds its address. A holder without such a connection is
// a Java Redisson client (its connections are unnamed unless it sets clientName) or a Go
// client whose connection is unnamed or gone: inspect says so rather than guess.
func identifyHolders(ctx context.Context, rc rueidis.Client, st *lockState) {
	if len(st.Holders) == 0 {
		return
	}
	conns, err := namedConnections(ctx, rc)
	for i := range st.Holders {
		h := &st.Holders[i]
		if h.Runtime != runtimeUnknown {
			continue
		}
		name := rlock.ConnectionNamePrefix + h.ClientID
		switch addr, ok := conns[name]; {
		case err != nil:
			h.RuntimeHint = fmt.Sprintf("cannot tell: CLIENT LIST failed (%v)", err)
		case ok:
			h.Runtime, h.Address, h.ConnectionName = runtimeGo, addr, name
			h.RuntimeHint = "a goredisson client, connected from " + addr
		default:
			h.RuntimeHint = "no connection named " + name + ": a Java Redisson client (unnamed unless it sets clientName), or a Go client whose connection is unnamed or gone"
		}
	}
}

// namedConnections returns the address of every named connection of the servers behind rc
// (each node of a cluster), by name.
func namedConnections(ctx context.Context, rc rueidis.Client) (map[string]string, error) {
	clients := []rueidis.Client{rc}
	if rc.Mode() == rueidis.ClientModeCluster {
		clients = clients[:0]
		for _, node := range rc.Nodes() {
			clients = append(clients, node)
		}
	}
	out := map[string]string{}
	for _, c := range clients {
		list, err := c.Do(ctx, c.B().ClientList().Build()).ToString()
		if err != nil {
			return nil, err
		}
		for _, line := range strings.Split(list, "\n") {
			var name, addr string
			for _, kv := range strings.Fields(line) {
				k, v, _ := strings.Cut(kv, "=")
				switch k {
				case "name":
					name = v
				case "addr":
					addr = v
				}
			}
			if name != "" {
				out[name] = addr
			}
		}
	}
	return out, nil
}
