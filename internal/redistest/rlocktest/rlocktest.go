// Package rlocktest ties rlock Clients to tests, for the test packages outside rlock
// (package rlock's own tests cannot import it: it imports rlock).
package rlocktest

import (
	"context"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/goredisson/goredisson/rlock"
)

// NewClient returns an rlock.Client on rc with opts, and closes it in t.Cleanup: before rc
// when rc was created earlier in the test, cleanups running last-in first-out. It fails the
// test when rlock.New fails or takes longer than 10 s.
func NewClient(t testing.TB, rc rueidis.Client, opts rlock.Options) *rlock.Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := rlock.New(ctx, rc, opts)
	if err != nil {
		t.Fatalf("rlocktest: rlock.New: %v", err)
	}
	t.Cleanup(c.Close)
	return c
}

// Held returns l's Held context for the owner that ctx carries, and stops it in t.Cleanup;
// it fails the test when that owner does not hold l.
func Held(t testing.TB, l *rlock.Lock, ctx context.Context) context.Context {
	t.Helper()
	held, stop, err := l.Held(ctx)
	if err != nil {
		t.Fatalf("rlocktest: Held: %v", err)
	}
	t.Cleanup(stop)
	return held
}
