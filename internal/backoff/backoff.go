// Package backoff spaces out retries of an operation that failed for a transient reason.
package backoff

import (
	"context"
	"time"
)

// Backoff is an exponential delay: it starts at Min and doubles up to Max. The zero value
// is not usable; create one with New. It is not safe for concurrent use.
type Backoff struct {
	next, max time.Duration
}

// New returns a Backoff whose first delay is min and whose delays never exceed max.
func New(min, max time.Duration) *Backoff { return &Backoff{next: min, max: max} }

// Next returns the current delay and doubles it up to the maximum, for a caller that waits
// on more than a context.
func (b *Backoff) Next() time.Duration {
	d := b.next
	b.next = min(2*b.next, b.max)
	return d
}

// Wait blocks for the current delay, then doubles it up to the maximum. It reports false,
// early, when ctx ends first.
func (b *Backoff) Wait(ctx context.Context) bool {
	t := time.NewTimer(b.Next())
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
