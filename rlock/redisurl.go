package rlock

import (
	"errors"
	"fmt"
	"strings"

	"github.com/redis/rueidis"
)

// ErrRedisURL is returned by ParseRedisURL for an address it cannot use.
var ErrRedisURL = errors.New("rlock: bad Redis address")

// ParseRedisURL turns a Redis address into the rueidis options to connect with, as the
// goredisson command does with REDIS_URL and --redis. It accepts host:port
// (127.0.0.1:6379, localhost:6379, [::1]:6379), redis://[user:password@]host:port[/db],
// rediss://… (TLS) and unix:///path/to/socket; the URL forms are rueidis.ParseURL's.
// An empty s (an unset REDIS_URL, typically) is an error that says so.
//
//	opt, err := rlock.ParseRedisURL(os.Getenv("REDIS_URL"))
func ParseRedisURL(s string) (rueidis.ClientOption, error) {
	s = strings.TrimSpace(s)
	switch {
	case s == "":
		return rueidis.ClientOption{}, fmt.Errorf("%w: empty (is REDIS_URL set? e.g. REDIS_URL=redis://127.0.0.1:6379/0)", ErrRedisURL)
	case strings.Contains(s, "://"):
		opt, err := rueidis.ParseURL(s)
		if err != nil {
			return opt, fmt.Errorf("%w: %q: %v (want host:port, redis://host:port[/db], rediss://… or unix:///path)", ErrRedisURL, s, err)
		}
		return opt, nil
	case strings.ContainsAny(s, " /@") || !strings.Contains(s, ":"):
		return rueidis.ClientOption{}, fmt.Errorf("%w: %q (want host:port or a redis:// URL)", ErrRedisURL, s)
	}
	return rueidis.ClientOption{InitAddress: []string{s}}, nil
}
