package redistest

import (
	"testing"

	"github.com/redis/rueidis"
)

// Client returns a rueidis client connected to s and closes it in t.Cleanup (before
// the server of a [Start] is stopped, cleanups running last-in first-out). Each opt
// edits the [rueidis.ClientOption] after InitAddress is set to s.Addr. It fails the
// test if the client cannot connect (rueidis dials at creation).
func (s *Server) Client(t testing.TB, opts ...func(*rueidis.ClientOption)) rueidis.Client {
	t.Helper()
	o := rueidis.ClientOption{InitAddress: []string{s.Addr}}
	for _, opt := range opts {
		opt(&o)
	}
	c, err := rueidis.NewClient(o)
	if err != nil {
		t.Fatalf("redistest: rueidis client for %s server %s: %v", s.mode, s.Addr, err)
	}
	t.Cleanup(c.Close)
	return c
}
