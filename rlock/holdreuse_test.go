package rlock

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestHoldReuse: the table of holds reuses an ended hold for the next one. The watch that
// Held handed out for the ended hold does not touch the new one when stopped late, and the
// new hold's expiry timer is armed again: its lease still ends it.
func TestHoldReuse(t *testing.T) {
	f := newFixture(t, Options{})
	x, y := f.c.NewLock(f.name+":x"), f.c.NewLock(f.name+":y")
	a, b := f.owners()

	require.NoError(t, x.Lock(a))
	heldA, stopA, err := x.Held(a)
	require.NoError(t, err)
	require.NoError(t, x.Unlock(a))
	<-heldA.Done()
	assert.ErrorIs(t, context.Cause(heldA), ErrReleased)

	require.NoError(t, y.LockFor(b, 300*time.Millisecond)) // the ended hold, reused
	heldB, stopB, err := y.Held(b)
	require.NoError(t, err)
	defer stopB()
	stopA() // late: must not take b's watch away
	select {
	case <-heldB.Done():
		t.Fatalf("b's hold ended when a's watch stopped: %v", context.Cause(heldB))
	default:
	}
	select {
	case <-heldB.Done():
		assert.ErrorIs(t, context.Cause(heldB), ErrLeaseExpired, "the reused hold's expiry timer ran")
	case <-time.After(10 * time.Second):
		t.Fatal("the reused hold outlived its lease")
	}
	assert.Equal(t, 0, f.c.holds.count())
}
