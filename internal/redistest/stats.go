package redistest

import (
	"context"
	"strconv"
	"strings"

	"github.com/redis/rueidis"
)

// CommandCalls returns how many times command (lowercase, e.g. "pttl") has run on the
// server or node behind rc, from its INFO commandstats: 0 before the first call. Commands
// that scripts run are counted.
func CommandCalls(ctx context.Context, rc rueidis.Client, command string) (int64, error) {
	info, err := rc.Do(ctx, rc.B().Info().Section("commandstats").Build()).ToString()
	if err != nil {
		return 0, err
	}
	prefix := "cmdstat_" + command + ":calls="
	for line := range strings.Lines(info) {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(line), prefix); ok {
			n, _, _ := strings.Cut(rest, ",")
			return strconv.ParseInt(n, 10, 64)
		}
	}
	return 0, nil
}
