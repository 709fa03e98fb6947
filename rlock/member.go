package rlock

import (
	"context"
	"fmt"

	"github.com/redis/rueidis"
)

// ConnectMember creates the rueidis client of one RedLock server, and a Client on it (as
// New does), even while that server is down: a process can then build its RedLock, and
// acquire it with a majority, while a minority of the servers is down. The member's calls
// fail with a connection error until its server answers, and succeed from then on, with no
// call of the caller's: the RedLock counts the member as one it could not take meanwhile.
// End both with Close, the Client first.
//
// rueidis.NewClient dials at once and fails when the server does not answer; ConnectMember
// sets opt.ForceSingleClient, which keeps the client and dials again at the next command.
// opt names one server (one InitAddress): ConnectMember returns ErrInvalidOptions
// otherwise, rueidis.NewClient's error for any other bad option, and New's error (the
// rueidis client then closed).
func ConnectMember(ctx context.Context, opt rueidis.ClientOption, opts Options) (*Client, rueidis.Client, error) {
	if len(opt.InitAddress) != 1 {
		return nil, nil, fmt.Errorf("%w: a RedLock member is one server, got %d addresses", ErrInvalidOptions, len(opt.InitAddress))
	}
	opt.ForceSingleClient = true
	rc, err := rueidis.NewClient(opt)
	if rc == nil {
		return nil, nil, err
	}
	c, err := New(ctx, rc, opts)
	if err != nil {
		rc.Close()
		return nil, nil, err
	}
	return c, rc, nil
}
