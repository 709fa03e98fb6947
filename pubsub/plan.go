package pubsub

import (
	"context"
	"errors"
	"fmt"

	"github.com/redis/rueidis"
)

// Kinds is a set of the two kinds of Redis pub/sub. In a Redis Cluster they do not reach
// each other: a PUBLISH reaches SUBSCRIBE subscribers only, an SPUBLISH SSUBSCRIBE
// subscribers only.
type Kinds uint8

const (
	// Classic is SUBSCRIBE and PUBLISH. In a cluster every PUBLISH is forwarded over the
	// cluster bus to every node, whether or not any client there subscribes.
	Classic Kinds = 1 << iota
	// Sharded is SSUBSCRIBE and SPUBLISH (Redis 7+). In a cluster an SPUBLISH reaches only
	// the nodes of the shard that serves the channel's slot.
	Sharded
)

// Has reports whether k holds every kind of o.
func (k Kinds) Has(o Kinds) bool { return k&o == o }

// PublishCommands returns the publish command of each kind in k, SPUBLISH first.
func (k Kinds) PublishCommands() []string {
	var out []string
	if k.Has(Sharded) {
		out = append(out, "SPUBLISH")
	}
	if k.Has(Classic) {
		out = append(out, "PUBLISH")
	}
	return out
}

func (k Kinds) String() string {
	switch k {
	case Classic:
		return "classic"
	case Sharded:
		return "sharded"
	case Classic | Sharded:
		return "classic+sharded"
	}
	return "none"
}

// Mode is how the lock clients of this module choose their pub/sub in a Redis Cluster
// (rlock.PubSubMode).
type Mode int

const (
	// ModeAuto listens the ways other services may publish and publishes the ways any
	// waiter may listen, sharded where the servers support it and classic elsewhere.
	ModeAuto Mode = iota
	// ModeSharded always subscribes with SSUBSCRIBE.
	ModeSharded
	// ModeClassic always subscribes with SUBSCRIBE.
	ModeClassic
)

// Plan is the pub/sub of a lock client: the kinds its waiters subscribe with (New) and the
// kinds its releases publish with (Kinds.PublishCommands).
type Plan struct {
	Listen  Kinds
	Publish Kinds
}

// ErrUnsupported is returned by Choose when the servers lack the pub/sub commands a Mode
// needs.
var ErrUnsupported = errors.New("pubsub: unsupported by the servers")

// Choose returns the Plan of a lock client on client, whose waiters use mode, when the other
// services that share its lock names (Java Redisson's) subscribe and publish with the kinds
// in others; the client's fellow Go services are assumed to run with the same mode and
// others. Outside a Redis Cluster every plan is Classic, and nothing is asked of the server.
//
// In a cluster Choose asks the server once, bounded by ctx, which pub/sub commands it has
// (COMMAND INFO; PUBSUB SHARDNUMSUB, as Redisson asks, where COMMAND is not allowed), and
// plans only with those: a Redis 6 cluster, or one with SPUBLISH or SSUBSCRIBE renamed
// away, is classic only. Others that name Sharded on servers without it use Classic, as
// Redisson's AUTO does. Then:
//
//   - ModeAuto listens with the kinds others use, or with Sharded (else Classic) when others
//     is empty, and publishes the same kinds: with others Classic|Sharded (unknown) its
//     waiters subscribe both ways and its releases publish both ways;
//   - ModeSharded and ModeClassic listen with their one kind and publish with it and the
//     kinds others use.
//
// Every waiter thus hears every release, and no release is published a way no waiter
// listens. A Go waiter that listens both ways hears a Go release twice; the second message
// wakes one more waiter, which tries once more and sleeps again (LockRule), and is
// harmless.
//
// It returns ErrUnsupported when mode's kind (or, for ModeAuto, any kind) is missing, and
// the error of the probe when it cannot reach the server.
func Choose(ctx context.Context, client rueidis.Client, mode Mode, others Kinds) (Plan, error) {
	if client.Mode() != rueidis.ClientModeCluster {
		return Plan{Listen: Classic, Publish: Classic}, nil
	}
	avail, err := supported(ctx, client)
	if err != nil {
		return Plan{}, fmt.Errorf("pubsub: probing the servers' pub/sub: %w", err)
	}
	if others.Has(Sharded) && !avail.Has(Sharded) {
		others = others&^Sharded | Classic
	}
	others &= avail
	var listen Kinds
	switch mode {
	case ModeSharded:
		listen = Sharded
	case ModeClassic:
		listen = Classic
	default:
		switch {
		case others != 0:
			listen = others
		case avail.Has(Sharded):
			listen = Sharded
		default:
			listen = Classic
		}
	}
	if !avail.Has(listen) {
		return Plan{}, fmt.Errorf("%w: %s pub/sub needed, the servers have %s", ErrUnsupported, listen, avail)
	}
	return Plan{Listen: listen, Publish: listen | others}, nil
}

// supported returns the kinds of pub/sub whose commands the server has.
func supported(ctx context.Context, client rueidis.Client) (Kinds, error) {
	names := []string{"SPUBLISH", "SSUBSCRIBE", "SUNSUBSCRIBE", "PUBLISH", "SUBSCRIBE", "UNSUBSCRIBE"}
	infos, err := client.Do(ctx, client.B().CommandInfo().CommandName(names...).Build()).ToArray()
	if _, isRedis := rueidis.IsRedisErr(err); isRedis {
		// COMMAND is not allowed: ask as Redisson does, and assume classic pub/sub.
		err := client.Do(ctx, client.B().PubsubShardnumsub().Build()).Error()
		if _, isRedis := rueidis.IsRedisErr(err); isRedis {
			return Classic, nil
		} else if err != nil {
			return 0, err
		}
		return Classic | Sharded, nil
	}
	if err != nil {
		return 0, err
	}
	has := func(from int) bool {
		for _, m := range infos[from : from+3] {
			if m.IsNil() {
				return false
			}
		}
		return true
	}
	var k Kinds
	if len(infos) == len(names) && has(0) {
		k |= Sharded
	}
	if len(infos) == len(names) && has(3) {
		k |= Classic
	}
	return k, nil
}
