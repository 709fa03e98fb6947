package slotmap_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/goredisson/goredisson/internal/keys"
	"github.com/goredisson/goredisson/internal/redistest"
	"github.com/goredisson/goredisson/internal/slotmap"
)

// Every slot of a healthy cluster has a master, and it is the node that serves the slot's
// keys.
func TestReadNamesEachSlotsMaster(t *testing.T) {
	c := redistest.StartCluster(t)
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	routes, err := slotmap.Read(ctx, c.Client(t))
	require.NoError(t, err)
	require.Len(t, routes, keys.SlotCount)
	masters := map[string]int{}
	for s, addr := range routes {
		require.NotEmpty(t, addr, "slot %d has a master", s)
		masters[addr]++
	}
	assert.Len(t, masters, 3, "the slots are spread over the three masters")
	for i := range 20 {
		key := "slotmap:" + strconv.Itoa(i)
		assert.Equal(t, c.MasterOf(t, key), routes[keys.Slot(key)], "the master of %s", key)
	}
}

// With every node down, Read fails rather than returning an empty map.
func TestReadFailsWhenNoNodeAnswers(t *testing.T) {
	c := redistest.StartCluster(t)
	rc := c.Client(t)
	for _, addr := range c.Addrs() {
		c.Kill(t, addr)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	routes, err := slotmap.Read(ctx, rc)
	assert.Error(t, err)
	assert.Nil(t, routes)
}
