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
	return newClient(t, rueidis.ClientOption{InitAddress: []string{s.Addr}}, opts, "")
}

// nodeOption is the option of a client bound to the one node at addr, following no
// redirects.
func nodeOption(addr string) rueidis.ClientOption {
	return rueidis.ClientOption{InitAddress: []string{addr}, ForceSingleClient: true, DisableCache: true}
}

// newClient applies opts to o, connects, checks the client's mode when want is not empty,
// and closes the client in t.Cleanup.
func newClient(t testing.TB, o rueidis.ClientOption, opts []func(*rueidis.ClientOption), want rueidis.ClientMode) rueidis.Client {
	t.Helper()
	for _, opt := range opts {
		opt(&o)
	}
	c, err := rueidis.NewClient(o)
	if err != nil {
		t.Fatalf("redistest: rueidis client for %v: %v", o.InitAddress, err)
	}
	t.Cleanup(c.Close)
	if want != "" && c.Mode() != want {
		t.Fatalf("redistest: rueidis client for %v is in mode %v, want %v", o.InitAddress, c.Mode(), want)
	}
	return c
}
