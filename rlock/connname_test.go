package rlock

import (
	"context"
	"testing"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/goredisson/goredisson/internal/redistest"
)

// TestConnectionName: New names an unnamed connection goredisson:<client id>, and keeps the
// name an application gave its connections with rueidis.ClientOption.ClientName.
func TestConnectionName(t *testing.T) {
	srv := redistest.Shared(t)
	ctx := redistest.Context(t, testTimeout)
	getname := func(rc rueidis.Client) string {
		name, err := rc.Do(ctx, rc.B().ClientGetname().Build()).ToString()
		if rueidis.IsRedisNil(err) {
			return ""
		}
		require.NoError(t, err)
		return name
	}

	c, rc := newClient(t, srv, Options{})
	assert.Equal(t, ConnectionNamePrefix+c.ID(), getname(rc))

	named := srv.Client(t, func(o *rueidis.ClientOption) { o.ClientName = "orders-api-7" })
	c2, err := New(context.Background(), named, Options{})
	require.NoError(t, err)
	defer c2.Close()
	assert.Equal(t, "orders-api-7", getname(named))
}
