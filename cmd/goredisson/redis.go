package main

import (
	"context"
	"crypto/x509"
	"fmt"
	"os"
	"strings"

	"github.com/redis/rueidis"

	"github.com/goredisson/goredisson/rlock"
)

// envRedisURL is the environment variable read when --redis is not given.
const envRedisURL = "REDIS_URL"

// envTLSCA is the environment variable read when --tls-ca is not given.
const envTLSCA = "REDIS_TLS_CA"

// defaultRedis is what inspect and force-unlock use when neither --redis nor REDIS_URL is set.
const defaultRedis = "127.0.0.1:6379"

// redisTarget says which Redis to use and where that came from.
type redisTarget struct {
	raw     string // as given: host:port or URL (may hold a password: never print it)
	source  string // "--redis", "$REDIS_URL" or "default"
	opt     rueidis.ClientOption
	display string // addresses only, for messages
}

// target resolves --redis, then $REDIS_URL. given is false when neither is set; then the
// target is fallback (unless fallback is empty, for demo, which starts its own server).
func (a *app) target(fallback string) (t redisTarget, given bool, err error) {
	switch {
	case a.redis != "":
		t.raw, t.source, given = a.redis, "--redis", true
	case a.getenv(envRedisURL) != "":
		t.raw, t.source, given = a.getenv(envRedisURL), "$"+envRedisURL, true
	case fallback == "":
		return t, false, nil
	default:
		t.raw, t.source = fallback, "default"
	}
	t.opt, err = parseRedis(t.raw)
	if err != nil {
		return t, given, usagef("%s: %v", t.source, err)
	}
	if err := a.trustCA(&t.opt); err != nil {
		return t, given, err
	}
	t.display = strings.Join(t.opt.InitAddress, ",")
	return t, given, nil
}

// trustCA makes opt trust only the CA certificates of --tls-ca, else of $REDIS_TLS_CA, when
// one is given: for a rediss:// URL only.
func (a *app) trustCA(opt *rueidis.ClientOption) error {
	file, source := a.tlsCA, "--tls-ca"
	if file == "" {
		file, source = a.getenv(envTLSCA), "$"+envTLSCA
	}
	if file == "" {
		return nil
	}
	if opt.TLSConfig == nil {
		return usagef("%s is given, but the Redis address is not a rediss:// URL", source)
	}
	pem, err := os.ReadFile(file)
	if err != nil {
		return usagef("%s: %v", source, err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return usagef("%s: no PEM certificate in %s", source, file)
	}
	opt.TLSConfig.RootCAs = pool
	return nil
}

// parseRedis accepts what rlock.ParseRedisURL does: host:port, or a redis://, rediss://
// or unix:// URL.
func parseRedis(s string) (rueidis.ClientOption, error) { return rlock.ParseRedisURL(s) }

// connect opens a rueidis client to t. rueidis dials at creation, so an unreachable server
// fails here (exit 1). The client-side cache is off: the tool reads fresh state.
func (a *app) connect(ctx context.Context, t redisTarget) (rueidis.Client, error) {
	opt := t.opt
	opt.DisableCache = true
	if a.timeout > 0 {
		opt.Dialer.Timeout = a.timeout
		opt.ConnWriteTimeout = a.timeout
	}
	rc, err := rueidis.NewClient(opt)
	if err != nil {
		return nil, fmt.Errorf("cannot reach Redis at %s (from %s): %w", t.display, t.source, err)
	}
	sctx, cancel := a.stepContext(ctx)
	defer cancel()
	if err := rc.Do(sctx, rc.B().Ping().Build()).Error(); err != nil {
		rc.Close()
		return nil, fmt.Errorf("Redis at %s (from %s) does not answer PING: %w", t.display, t.source, err)
	}
	return rc, nil
}

// readScript is a script that only reads. It runs as EVALSHA_RO (Redis 7+), so that an ACL
// user with read access (%R~) to its keys may run it, and as EVALSHA on a server without
// the read-only form.
type readScript struct{ ro, rw *rueidis.Lua }

func newReadScript(src string) readScript {
	return readScript{ro: rueidis.NewLuaScriptReadOnly(src), rw: rueidis.NewLuaScript(src)}
}

// Exec runs the script with keys and args.
func (s readScript) Exec(ctx context.Context, rc rueidis.Client, keys, args []string) rueidis.RedisResult {
	res := s.ro.Exec(ctx, rc, keys, args)
	if e, ok := rueidis.IsRedisErr(res.Error()); ok && strings.Contains(strings.ToLower(e.Error()), "unknown command") {
		return s.rw.Exec(ctx, rc, keys, args)
	}
	return res
}
