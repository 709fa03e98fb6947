package renewal

import "errors"

var (
	// ErrNotHeld is the loss cause reported when renewal found the owner's field gone: the lock
	// was released by its lease running out, force-unlocked, or lost with the server's data.
	ErrNotHeld = errors.New("renewal: lock no longer held by this owner")
	// ErrLeaseExpired is the loss cause reported when no renewal succeeded for a whole lease,
	// so the key must have expired on the server.
	ErrLeaseExpired = errors.New("renewal: no renewal succeeded within the lease")
)

// errShortReply means a renewal reply did not have one value per lock.
var errShortReply = errors.New("renewal: reply length does not match the batch")
