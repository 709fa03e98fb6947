package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/spf13/cobra"
)

// Exit codes. They are part of the command's interface: scripts test them.
const (
	exitOK          = 0   // the command did what was asked
	exitFailure     = 1   // operational error: Redis unreachable, a Redis error, a failed demo check
	exitUsage       = 2   // bad flags, arguments or command name
	exitNotFound    = 3   // inspect: a NAME is not a lock; force-unlock: nothing to unlock
	exitDeclined    = 4   // force-unlock: the confirmation was declined (or not given)
	exitInterrupted = 130 // Ctrl-C (SIGINT) or SIGTERM, after cleaning up
)

const exitCodesHelp = `Exit codes:
  0    success
  1    operational error: Redis unreachable or failing, a failed demo check (oversell...)
  2    usage error: unknown command or flag, missing or extra arguments, bad flag value
  3    inspect: at least one NAME is not a lock (no such key, or a key of another kind)
       force-unlock: nothing to unlock (no such key, or not a lock)
  4    force-unlock: confirmation declined, or no answer (stdin closed)
  130  interrupted (Ctrl-C / SIGTERM); throwaway servers and workers are removed first`

// exitError carries an exit code to run. A nil err means the message was already printed.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string {
	if e.err == nil {
		return fmt.Sprintf("exit status %d", e.code)
	}
	return e.err.Error()
}

func (e *exitError) Unwrap() error { return e.err }

// withCode wraps err with an exit code.
func withCode(code int, err error) error { return &exitError{code: code, err: err} }

// usagef returns a usage error (exit 2).
func usagef(format string, a ...any) error {
	return withCode(exitUsage, fmt.Errorf(format, a...))
}

// silent returns an error that only sets the exit code: the command printed why.
func silent(code int) error { return &exitError{code: code} }

// app holds what every command shares: the standard streams, the environment and the
// global flags.
type app struct {
	stdin          io.Reader
	stdout, stderr io.Writer
	getenv         func(string) string

	redis   string        // --redis
	tlsCA   string        // --tls-ca
	timeout time.Duration // --timeout
}

// run executes the command line args and returns the process exit code. ctx is cancelled
// on Ctrl-C (see main).
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	a := &app{stdin: stdin, stdout: stdout, stderr: stderr, getenv: os.Getenv}
	root := a.rootCommand()
	root.SetArgs(args)
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)

	started := false // set once a command's own code runs: errors before that are usage errors
	root.PersistentPreRunE = func(cmd *cobra.Command, _ []string) error {
		started = true
		if a.timeout < 0 {
			return usagef("--timeout must not be negative, got %v", a.timeout)
		}
		return nil
	}
	cmd, err := root.ExecuteContextC(ctx)
	if err == nil {
		return exitOK
	}
	var ee *exitError
	if !errors.As(err, &ee) {
		code := exitFailure
		if !started {
			code = exitUsage
		}
		ee = &exitError{code: code, err: err}
	}
	if ctx.Err() != nil && ee.code == exitFailure {
		fmt.Fprintln(stderr, "goredisson: interrupted")
		return exitInterrupted
	}
	if ee.err != nil {
		fmt.Fprintf(stderr, "goredisson: %v\n", ee.err)
	}
	if ee.code == exitUsage {
		path := "goredisson"
		if cmd != nil {
			path = cmd.CommandPath()
		}
		fmt.Fprintf(stderr, "Run '%s --help' for usage.\n", path)
	}
	return ee.code
}

func (a *app) rootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:   "goredisson",
		Short: "Inspect, force-unlock and demonstrate Redisson-compatible Redis locks",
		Long: `goredisson works with the locks of github.com/goredisson/goredisson/rlock, which share their
Redis keys with Java Redisson's RLock: a Go service and a Java service locking the same name
exclude each other.

A lock called NAME is a Redis hash at key NAME. Each field is one holder,
"<client-uuid>:<owner-id>", and its value is the holder's hold count (re-entries). The key's
TTL is the lease. A full release deletes the key and publishes "0" on the channel
"redisson_lock__channel:{NAME}", which wakes waiters. docs/PROTOCOL.md has the details.

Redis: --redis ADDR or the environment variable REDIS_URL (the flag wins). Both take
host:port or a URL: redis://[[user]:password@]host:port[/db], rediss://... for TLS,
unix:///path/to/redis.sock. --tls-ca FILE (or REDIS_TLS_CA) trusts the CA certificates in a PEM
file for rediss:// instead of the system's. Without either, inspect and force-unlock use 127.0.0.1:6379, and
demo starts a throwaway Redis of its own.

` + exitCodesHelp,
		Example: `  # See the whole inventory demo on a throwaway Redis (Docker or redis-server needed)
  goredisson demo

  # Who holds the lock of product 42, on the Redis of REDIS_URL?
  REDIS_URL=redis://127.0.0.1:6379/0 goredisson inspect lock:stock:42

  # The same, as JSON for scripts
  goredisson --redis 127.0.0.1:6379 inspect --json lock:stock:42 | jq '.locks[0].holders'

  # Release a lock whose holder died with a watchdog lease, without waiting 30 s
  goredisson force-unlock lock:stock:42`,
		SilenceErrors: true,
		SilenceUsage:  true,
		Args:          cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return cmd.Help()
		},
	}
	root.CompletionOptions.DisableDefaultCmd = true
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return withCode(exitUsage, err) })
	pf := root.PersistentFlags()
	pf.StringVar(&a.redis, "redis", "", "Redis to use: host:port or redis:// URL (default: $REDIS_URL, else see each command)")
	pf.StringVar(&a.tlsCA, "tls-ca", "", "PEM file of CA certificates to trust for a rediss:// URL instead of the system's (default: $"+envTLSCA+")")
	pf.DurationVar(&a.timeout, "timeout", 5*time.Second, "give up on Redis after this long: connecting, and each step of a command (0 = no limit)")

	root.AddCommand(a.demoCommand(), a.demoWorkerCommand(), a.inspectCommand(), a.forceUnlockCommand())
	return root
}

// usageArgs turns cobra's argument validation errors into usage errors (exit 2).
func usageArgs(v cobra.PositionalArgs) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if err := v(cmd, args); err != nil {
			return withCode(exitUsage, err)
		}
		return nil
	}
}

// stepContext bounds one step of a command by --timeout (0 = no bound).
func (a *app) stepContext(ctx context.Context) (context.Context, context.CancelFunc) {
	if a.timeout <= 0 {
		return context.WithCancel(ctx)
	}
	return context.WithTimeout(ctx, a.timeout)
}
