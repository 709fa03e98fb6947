package pubsub

import (
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func splitLines(s string) []string  { return strings.Split(strings.TrimSpace(s), "\n") }
func splitFields(s string) []string { return strings.Fields(s) }

func mustInt(t *testing.T, s string) int64 {
	n, err := strconv.ParseInt(s, 10, 64)
	require.NoError(t, err)
	return n
}
