// Command goredisson looks at and demonstrates goredisson locks, the Go locks that share
// their Redis keys with Java Redisson's RLock.
//
//	goredisson demo                      # the inventory case, on a throwaway Redis
//	goredisson inspect lock:stock:42     # who holds a lock, how long, who waits
//	goredisson force-unlock lock:stock:42
//
// Run `goredisson --help` and `goredisson COMMAND --help` for the flags, the exit codes
// and examples.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	go func() {
		// After the first Ctrl-C the command cleans up; a second one kills at once.
		<-ctx.Done()
		stop()
	}()
	code := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
