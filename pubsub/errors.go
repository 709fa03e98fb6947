package pubsub

import "errors"

// ErrClosed is returned by Subscribe and Waiter.Wait once the Subscriber is closed.
var ErrClosed = errors.New("pubsub: subscriber closed")
