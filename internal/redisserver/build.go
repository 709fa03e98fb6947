package redisserver

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"time"
)

// EnvServer is the environment variable that names the server program of process mode:
// the path of a redis-server or valkey-server build. Unset or empty means redis-server
// from PATH.
const EnvServer = "GOREDISSON_REDIS_SERVER"

// ServerProgram returns the server program that process mode runs: the path in
// [EnvServer] when set, else redis-server from PATH. The error wraps [ErrNoRedisServer]
// when neither is there.
func ServerProgram() (string, error) {
	if p := os.Getenv(EnvServer); p != "" {
		if _, err := exec.LookPath(p); err != nil {
			return "", fmt.Errorf("%w: %s=%s: %v", ErrNoRedisServer, EnvServer, p, err)
		}
		return p, nil
	}
	p, err := exec.LookPath("redis-server")
	if err != nil {
		return "", fmt.Errorf("%w (apt-get install -y redis-server, or set %s): %v", ErrNoRedisServer, EnvServer, err)
	}
	return p, nil
}

// Build is a server's product and version: "Redis 7.0.15", "Valkey 8.1.8".
type Build struct {
	// Product is "Redis" or "Valkey".
	Product string
	// Version is the product's own version, e.g. "8.1.8" for Valkey 8.1.8 (whose
	// redis_version says 7.2.4).
	Version string
}

func (b Build) String() string { return b.Product + " " + b.Version }

// Before reports whether b is a Redis older than major.minor. A Valkey build is never
// before a Redis 7.2 (Valkey forked from it); for later Redis lines it compares Valkey's
// version as is.
func (b Build) Before(major, minor int) bool {
	if b.Product == "Valkey" && (major < 7 || major == 7 && minor <= 2) {
		return false
	}
	v := strings.SplitN(b.Version, ".", 3)
	if len(v) < 2 {
		return false
	}
	ma, err1 := strconv.Atoi(v[0])
	mi, err2 := strconv.Atoi(v[1])
	if err1 != nil || err2 != nil {
		return false
	}
	return ma < major || ma == major && mi < minor
}

// ParseVersionOutput reads the first line of `redis-server --version`: "Redis server
// v=7.0.15 sha=…" or "Valkey server v=8.1.8 sha=…".
func ParseVersionOutput(out string) (Build, error) {
	fields := strings.Fields(out)
	if len(fields) >= 3 && fields[1] == "server" {
		if v, ok := strings.CutPrefix(fields[2], "v="); ok && v != "" {
			return Build{Product: fields[0], Version: v}, nil
		}
	}
	return Build{}, fmt.Errorf("not a server's --version output: %.200q", out)
}

// ParseInfoServer reads INFO server's reply: Valkey says server_name:valkey and
// valkey_version, Redis only redis_version.
func ParseInfoServer(info string) (Build, error) {
	kv := map[string]string{}
	for line := range strings.SplitSeq(info, "\n") {
		if k, v, ok := strings.Cut(strings.TrimSpace(line), ":"); ok {
			kv[k] = v
		}
	}
	if v := kv["valkey_version"]; v != "" {
		return Build{Product: "Valkey", Version: v}, nil
	}
	if v := kv["redis_version"]; v != "" {
		return Build{Product: "Redis", Version: v}, nil
	}
	return Build{}, errors.New("INFO server names no redis_version nor valkey_version")
}

var programBuilds sync.Map // path -> Build

// ProgramBuild runs `program --version` (once per program and process) and returns what
// it says.
func ProgramBuild(program string) (Build, error) {
	if b, ok := programBuilds.Load(program); ok {
		return b.(Build), nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, program, "--version").CombinedOutput()
	if err != nil {
		return Build{}, fmt.Errorf("%s --version: %w: %.200s", program, err, out)
	}
	b, err := ParseVersionOutput(string(out))
	if err != nil {
		return Build{}, fmt.Errorf("%s --version: %w", program, err)
	}
	programBuilds.Store(program, b)
	return b, nil
}
