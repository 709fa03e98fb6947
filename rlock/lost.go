package rlock

import (
	"context"
	"errors"
	"net"
	"time"

	"github.com/redis/rueidis"
)

// connectionError reports whether err is a failure of the connection to Redis rather than
// an answer of Redis or an outcome of this package: the request was not sent (a dial that
// failed), or it was and its reply was lost. A closed rueidis client is no such failure: it
// does not come back.
func connectionError(err error) bool {
	if !transient(err) {
		return false
	}
	for _, known := range []error{ErrLocked, ErrClosed, ErrReentry, ErrNotReplicated, errUnconfirmed, errNoReply,
		context.Canceled, context.DeadlineExceeded, rueidis.ErrClosing} {
		if errors.Is(err, known) {
			return false
		}
	}
	return true
}

// uncertain reports whether err, from a script that writes, leaves unknown whether the
// script ran: a connection error after the request may have been sent (not a dial that
// failed).
func uncertain(err error) bool {
	if !connectionError(err) {
		return false // before op, which escapes: no allocation on the path without an error
	}
	var op *net.OpError
	return !errors.As(err, &op) || op.Op != "dial"
}

// lostRequestGrace is how long after its reply was lost a request may still reach Redis
// and run (a proxy between the client and Redis may hold it) before what it may have taken
// is given back: the give-back waits that long first. A request that runs later still leaves
// what it took, which ends with its lease (never renewed), or, for an expirable semaphore's
// permits taken without a lease, stays until released by hand.
const lostRequestGrace = 100 * time.Millisecond

// afterLostRequest waits lostRequestGrace, or less when ctx ends first.
func afterLostRequest(ctx context.Context) {
	t := time.NewTimer(lostRequestGrace)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}

// forget releases a hold that an acquire of l by field whose reply was lost (uncertain)
// may have taken, after lostRequestGrace and bounded by ReleaseTimeout, unless field holds
// l through this client: then the lost request was a re-entry, whose count the registry
// cannot tell, and the hold stays the registry's. When the release fails too, a hold the
// request took ends with its lease, never renewed.
func (l *Lock) forget(ctx context.Context, field string) {
	if l.c.holds.has(l.name, field) {
		return
	}
	rctx := detach(ctx, l.c.opts.ReleaseTimeout)
	afterLostRequest(rctx)
	_, err := l.release(rctx, field, false, true, false)
	l.c.obs.log.Debug("rlock: released a hold an acquire may have taken before its reply was lost", "lock", l.name, "holder", field, "error", err)
}
