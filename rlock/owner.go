package rlock

import (
	"context"
	"strconv"
	"sync/atomic"
)

// Owner identifies who holds a lock, as a Java thread does in Redisson: the same owner
// re-enters a lock it holds (the hold count goes up), a different owner waits. An owner is
// a positive integer, unique within the process; it is written in the lock's hash field as
// "<client-uuid>:<owner>", so owners of different clients never collide.
type Owner int64

var lastOwner atomic.Int64

type ownerKey struct{}

// NewOwner returns a copy of ctx carrying a newly minted owner, distinct from every other
// owner of this process. Mint one per logical task (a request, a job), and pass the returned
// ctx, or contexts derived from it, to every lock call of that task: nested calls with it
// re-enter. A ctx that already carries an owner gets a new one, which replaces it.
func NewOwner(ctx context.Context) context.Context {
	return WithOwner(ctx, Owner(lastOwner.Add(1)))
}

// WithOwner returns a copy of ctx carrying owner o. Use it to hand an owner to another
// goroutine that does not share ctx, e.g. WithOwner(context.Background(), o) where o came
// from OwnerFrom. Two goroutines using one owner at once act as one holder.
func WithOwner(ctx context.Context, o Owner) context.Context {
	return context.WithValue(ctx, ownerKey{}, o)
}

// OwnerFrom returns the owner carried by ctx, and false when it carries none.
func OwnerFrom(ctx context.Context) (Owner, bool) {
	o, ok := ctx.Value(ownerKey{}).(Owner)
	return o, ok
}

// String returns the owner as the decimal integer written in hash fields.
func (o Owner) String() string { return strconv.FormatInt(int64(o), 10) }
