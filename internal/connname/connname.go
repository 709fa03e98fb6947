// Package connname names Redis connections, keeping a name the application gave them.
package connname

import (
	"context"
	"time"

	"github.com/redis/rueidis"
)

// Timeout bounds the naming of a connection.
const Timeout = time.Second

// Set names the connection behind c CLIENT SETNAME name, unless CLIENT GETNAME shows it
// named already: a name the application set (rueidis.ClientOption.ClientName) is kept. It
// returns the error of CLIENT SETNAME: the server's refusal (an ACL without
// +client|setname) or the connection's.
func Set(ctx context.Context, c rueidis.CommandClient, name string) error {
	if cur, err := c.Do(ctx, c.B().ClientGetname().Build()).ToString(); err == nil && cur != "" {
		return nil
	}
	return c.Do(ctx, c.B().ClientSetname().ConnectionName(name).Build()).Error()
}
