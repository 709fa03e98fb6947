// Package slotmap reads which master serves each hash slot of a Redis Cluster.
package slotmap

import (
	"context"
	"errors"
	"net"
	"strconv"
	"time"

	"github.com/redis/rueidis"

	"github.com/goredisson/goredisson/internal/keys"
)

// askTimeout bounds Read's wait for one node's answer.
const askTimeout = time.Second

// ErrNoNode is Read's error when the client knows no node to ask.
var ErrNoNode = errors.New("slotmap: the cluster client knows no node")

// Read returns the master address of each hash slot of the cluster behind client, in the
// form client.Nodes uses for its keys: "" for a slot that no master serves. It asks the
// nodes client.Nodes lists, one after the other, until one answers CLUSTER SLOTS, each for
// at most askTimeout (a node that hangs is passed over), all within ctx.
func Read(ctx context.Context, client rueidis.Client) ([]string, error) {
	err := ErrNoNode
	for addr, node := range client.Nodes() {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		actx, cancel := context.WithTimeout(ctx, askTimeout)
		var reply []rueidis.RedisMessage
		reply, err = node.Do(actx, node.B().ClusterSlots().Build()).ToArray()
		cancel()
		if err == nil {
			host, _, _ := net.SplitHostPort(addr)
			return Parse(reply, host), nil
		}
	}
	return nil, err
}

// Parse maps a CLUSTER SLOTS reply to the master address of each slot. A master announced
// without a host has the asked node's host (askedHost); one announced as "?" (unknown)
// serves no slot here. Malformed ranges are skipped.
func Parse(reply []rueidis.RedisMessage, askedHost string) []string {
	routes := make([]string, keys.SlotCount)
	for _, r := range reply {
		v, err := r.ToArray()
		if err != nil || len(v) < 3 {
			continue
		}
		start, err1 := v[0].AsInt64()
		end, err2 := v[1].AsInt64()
		m, err3 := v[2].ToArray()
		if err1 != nil || err2 != nil || err3 != nil || len(m) < 2 {
			continue
		}
		host, _ := m[0].ToString()
		port, err := m[1].AsInt64()
		if err != nil || host == "?" {
			continue
		}
		if host == "" {
			host = askedHost
		}
		addr := net.JoinHostPort(host, strconv.FormatInt(port, 10))
		for s := max(start, 0); s <= end && s < int64(len(routes)); s++ {
			routes[s] = addr
		}
	}
	return routes
}
