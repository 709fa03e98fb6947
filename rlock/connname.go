package rlock

import (
	"context"

	"github.com/redis/rueidis"

	"github.com/goredisson/goredisson/internal/connname"
)

// ConnectionNamePrefix starts the name a Client gives its connections: the name is the
// prefix and the client id, "goredisson:<client-uuid>", so that CLIENT LIST (and
// `goredisson inspect`) ties the holder field "<client-uuid>:<owner>" to a connection and
// its address.
const ConnectionNamePrefix = "goredisson:"

// nameConnections names, best effort, the connection that c's calls share on each node:
// CLIENT SETNAME goredisson:<id>, unless the connection already has a name (the
// application's rueidis.ClientOption.ClientName), which it keeps. A server that refuses it (an ACL without
// +client|setname) or an error leaves the connection unnamed, logged at debug level; a
// connection rueidis opens later (after a reconnect, or a pooled one) is not named. To name
// every connection, set rueidis.ClientOption.ClientName yourself.
func (c *Client) nameConnections(ctx context.Context) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), connname.Timeout)
	defer cancel()
	name := ConnectionNamePrefix + c.id
	clients := []rueidis.Client{c.rc}
	if c.rc.Mode() == rueidis.ClientModeCluster {
		clients = clients[:0]
		for _, node := range c.rc.Nodes() {
			clients = append(clients, node)
		}
	}
	for _, rc := range clients {
		if err := connname.Set(ctx, rc, name); err != nil {
			c.obs.log.Debug("rlock: could not name the connection (CLIENT SETNAME)", "name", name, "error", err)
		}
	}
}
