package redistest

import (
	"context"
	"testing"

	"github.com/redis/rueidis"

	"github.com/goredisson/goredisson/internal/redisserver"
)

// Feature is a server capability that only some server lines have. A test that needs one
// calls [Require], which skips it by name on a server without it, so that the suite runs
// against any redis-server it is given (see [redisserver.EnvServer]).
type Feature struct {
	// Name says what the feature is and where it comes from, for the skip message.
	Name string
	// command is a command (or container|subcommand) the server knows when it has the
	// feature: COMMAND INFO answers nil for an unknown or renamed one.
	command string
}

// The features that tests check for.
var (
	// ShardedPubSub is SPUBLISH, SSUBSCRIBE and PUBSUB SHARDNUMSUB (Redis 7.0+).
	ShardedPubSub = Feature{Name: "sharded pub/sub (SPUBLISH, Redis 7.0+)", command: "spublish"}
	// ReadOnlyScripts is EVALSHA_RO and EVAL_RO (Redis 7.0+).
	ReadOnlyScripts = Feature{Name: "EVALSHA_RO (Redis 7.0+)", command: "evalsha_ro"}
	// WaitAOF is WAITAOF (Redis 7.2+).
	WaitAOF = Feature{Name: "WAITAOF (Redis 7.2+)", command: "waitaof"}
	// ACLSelectors is ACL selectors and ACL DRYRUN (Redis 7.0+).
	ACLSelectors = Feature{Name: "ACL selectors (ACL DRYRUN, Redis 7.0+)", command: "acl|dryrun"}
	// ScriptACLCheck is redis.acl_check_cmd in scripts, which came with ACL DRYRUN in
	// Redis 7.0 (a script's functions have no COMMAND INFO: ACL DRYRUN stands for it).
	ScriptACLCheck = Feature{Name: "redis.acl_check_cmd (Redis 7.0+)", command: "acl|dryrun"}
	// ClientSetinfo is CLIENT SETINFO (Redis 7.2+, Valkey).
	ClientSetinfo = Feature{Name: "CLIENT SETINFO (Redis 7.2+)", command: "client|setinfo"}
)

// Has reports whether the server behind rc has f. It fails the test when the server does
// not answer COMMAND INFO.
func Has(t testing.TB, rc rueidis.Client, f Feature) bool {
	t.Helper()
	infos, err := rc.Do(context.Background(), rc.B().CommandInfo().CommandName(f.command).Build()).ToArray()
	if err != nil {
		t.Fatalf("redistest: COMMAND INFO %s: %v", f.command, err)
	}
	return len(infos) == 1 && !infos[0].IsNil()
}

// Require skips t, naming f and the server's build, when the server behind rc lacks f.
func Require(t testing.TB, rc rueidis.Client, f Feature) {
	t.Helper()
	if !Has(t, rc, f) {
		t.Skipf("needs %s, which %s lacks", f.Name, BuildOf(t, rc))
	}
}

// BuildOf returns the build of the server behind rc as INFO server names it: "Redis
// 7.0.15", "Valkey 8.1.8".
func BuildOf(t testing.TB, rc rueidis.Client) redisserver.Build {
	t.Helper()
	info, err := rc.Do(context.Background(), rc.B().Info().Section("server").Build()).ToString()
	if err != nil {
		t.Fatalf("redistest: INFO server: %v", err)
	}
	b, err := redisserver.ParseInfoServer(info)
	if err != nil {
		t.Fatalf("redistest: %v", err)
	}
	return b
}

// programBuild is the build of the server program that process mode runs, for the
// harness's own choices (command-line options that older lines lack).
func programBuild(t testing.TB) (string, redisserver.Build) {
	t.Helper()
	bin, err := redisserver.ServerProgram()
	if err != nil {
		t.Fatalf("redistest: %v", err)
	}
	b, err := redisserver.ProgramBuild(bin)
	if err != nil {
		t.Fatalf("redistest: %v", err)
	}
	return bin, b
}

// describeBuild names the build a server of newServer runs, for the log line of a start:
// the server program's --version in process mode (the harness sends the server nothing, so
// that tests that count commands count only their own), the image in container mode.
func describeBuild(mode string) string {
	if mode != ModeProcess {
		return "the image's build"
	}
	bin, err := redisserver.ServerProgram()
	if err != nil {
		return err.Error()
	}
	b, err := redisserver.ProgramBuild(bin)
	if err != nil {
		return err.Error()
	}
	return b.String()
}
