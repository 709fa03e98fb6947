package rlock

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseRedisURL(t *testing.T) {
	for s, addr := range map[string]string{
		"127.0.0.1:6379":               "127.0.0.1:6379",
		"localhost:6379":               "localhost:6379",
		" [::1]:6380 ":                 "[::1]:6380",
		"redis://127.0.0.1:6379/0":     "127.0.0.1:6379",
		"redis://u:p@localhost:6379/2": "localhost:6379",
		"rediss://redis.example:6380":  "redis.example:6380",
		"unix:///run/redis.sock":       "/run/redis.sock",
	} {
		opt, err := ParseRedisURL(s)
		require.NoError(t, err, s)
		assert.Equal(t, []string{addr}, opt.InitAddress, s)
	}
	opt, err := ParseRedisURL("rediss://redis.example:6380")
	require.NoError(t, err)
	assert.NotNil(t, opt.TLSConfig, "rediss is TLS")
	opt, err = ParseRedisURL("redis://u:p@localhost:6379/2")
	require.NoError(t, err)
	assert.Equal(t, "u", opt.Username)
	assert.Equal(t, "p", opt.Password)
	assert.Equal(t, 2, opt.SelectDB)

	_, err = ParseRedisURL("")
	require.ErrorIs(t, err, ErrRedisURL)
	assert.ErrorContains(t, err, "REDIS_URL", "an unset variable is named")
	for _, bad := range []string{"localhost", "redis:/x", "http://127.0.0.1:6379", "a b:1"} {
		_, err := ParseRedisURL(bad)
		assert.ErrorIs(t, err, ErrRedisURL, bad)
		assert.ErrorContains(t, err, bad)
	}
}
