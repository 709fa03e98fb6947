package rlock_test

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"os"

	"github.com/redis/rueidis"

	"github.com/goredisson/goredisson/rlock"
)

// Connecting over TLS as an ACL user (docs/SECURITY.md has the rules the user needs), and
// telling a refused permission from other errors.
func Example_aclAndTLS() {
	opt, err := rueidis.ParseURL("rediss://orders-svc:orders-secret@redis.internal:6380")
	if err != nil {
		fmt.Println(err)
		return
	}
	if pem, err := os.ReadFile("/etc/redis/ca.pem"); err == nil { // a private CA
		pool := x509.NewCertPool()
		pool.AppendCertsFromPEM(pem)
		opt.TLSConfig.RootCAs = pool
	}
	rc, err := rueidis.NewClient(opt)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer rc.Close()
	ctx := context.Background()
	locks, err := rlock.New(ctx, rc, rlock.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer locks.Close()
	ctx = rlock.NewOwner(ctx)
	order := locks.NewLock("orders:42")
	err = order.Lock(ctx)
	if errors.Is(err, rlock.ErrNoPermission) {
		fmt.Println("grant the user what docs/SECURITY.md lists:", err) // names what was refused
		return
	}
	if err != nil {
		fmt.Println(err)
		return
	}
	defer order.Unlock(ctx)
}
