package renewal

import "errors"

// errShortReply means a renewal reply did not have one value per lock.
var errShortReply = errors.New("renewal: reply length does not match the batch")
