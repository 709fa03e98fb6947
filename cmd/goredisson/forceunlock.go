package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/goredisson/goredisson/rlock"
)

const forceUnlockLong = `Force-unlock deletes the lock NAME whoever holds it, Java or Go, and publishes "0" on
"redisson_lock__channel:{NAME}" so that waiting clients wake and retry, exactly as Redisson's
forceUnlock() does (it calls rlock's Lock.ForceUnlock). A fair lock keeps its queue and "0"
wakes its first waiter, on that waiter's own channel (NewFairLock's ForceUnlock). A
read-write lock is deleted by the handle of the mode it shows, ReadLock or WriteLock, and only
if it is still in that mode; "0" goes to "redisson_rwlock:{NAME}".

Use it for a lock whose holder is gone and whose lease will not end soon (a lock taken with
a long explicit lease, or with no TTL at all). A watchdog lock of a dead holder frees itself
within 30 s by default. The holders keep running as if they held the lock: the next Unlock
of each fails (goredisson: rlock.ErrNotHeld; Java: IllegalMonitorStateException), and two
owners may act under the "same" lock until they notice.

It first shows the holders, then asks for confirmation on the terminal (stdin): y or yes
goes on, anything else, or no answer (stdin closed), changes nothing and exits 4. --yes
skips the question. If the holders change while you answer, nothing is deleted (exit 1):
run it again.

Exit codes: 0 unlocked, 3 nothing to unlock (no such key, the lock released or its mode
changed meanwhile, or a key that is not a lock: it is never deleted), 4 declined, 1 Redis
error.`

func (a *app) forceUnlockCommand() *cobra.Command {
	var yes bool
	cmd := &cobra.Command{
		Use:   "force-unlock NAME",
		Short: "Delete a lock whoever holds it and wake its waiters (asks first)",
		Long:  forceUnlockLong,
		Example: `  # Look, then confirm on the terminal
  goredisson force-unlock lock:stock:42

  # In a script: no question; exit 3 means there was nothing to unlock
  goredisson --redis 127.0.0.1:6379 force-unlock --yes lock:stock:42

  # Answer from a pipe
  echo y | goredisson force-unlock lock:stock:42`,
		Args: usageArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.forceUnlock(cmd.Context(), args[0], yes)
		},
	}
	cmd.Flags().BoolVarP(&yes, "yes", "y", false, "do not ask for confirmation")
	return cmd
}

func (a *app) forceUnlock(ctx context.Context, name string, yes bool) error {
	if name == "" {
		return usagef("empty lock name")
	}
	t, _, err := a.target(defaultRedis)
	if err != nil {
		return err
	}
	sctx, cancel := a.stepContext(ctx)
	defer cancel()
	rc, err := a.connect(sctx, t)
	if err != nil {
		return err
	}
	defer rc.Close()
	st, err := readLock(sctx, rc, name)
	if err != nil {
		return err
	}
	if done := a.nothingToUnlock(st, false); done != nil {
		return done
	}
	fmt.Fprint(a.stdout, st.text())

	if !yes {
		waiters := int64(0)
		if st.Subscribers.Classic != nil {
			waiters += *st.Subscribers.Classic
		}
		if st.Subscribers.Sharded != nil {
			waiters += *st.Subscribers.Sharded
		}
		fmt.Fprintf(a.stderr, "Force-unlock %s? Its %s will keep running as if it held the lock; %s will be woken. [y/N] ",
			name, plural(int64(len(st.Holders)), "holder", "holders"), plural(waiters, "waiting client", "waiting clients"))
		answer, err := readAnswer(ctx, a.stdin)
		if err != nil && !errors.Is(err, io.EOF) {
			return err
		}
		switch strings.ToLower(strings.TrimSpace(answer)) {
		case "y", "yes":
		default:
			if errors.Is(err, io.EOF) && answer == "" {
				fmt.Fprintln(a.stderr, "\nno answer (stdin closed): declined, nothing changed (use --yes in scripts)")
			} else {
				fmt.Fprintln(a.stderr, "declined: nothing changed")
			}
			return silent(exitDeclined)
		}
		sctx, cancel = a.stepContext(ctx)
		defer cancel()
		now, err := readLock(sctx, rc, name)
		if err != nil {
			return err
		}
		if done := a.nothingToUnlock(now, true); done != nil {
			return done
		}
		if !slices.Equal(now.fields(), st.fields()) {
			fmt.Fprint(a.stderr, "the lock changed hands while you answered; now:\n"+now.text())
			return withCode(exitFailure, errors.New("nothing changed: run force-unlock again to see and confirm the new holders"))
		}
	}

	lc, err := rlock.New(sctx, rc, rlock.Options{})
	if err != nil {
		return err
	}
	defer lc.Close()
	l, woken := forceHandle(lc, st)
	existed, err := l.ForceUnlock(sctx)
	if err != nil {
		return fmt.Errorf("force-unlock %s: %w", name, err)
	}
	if !existed {
		fmt.Fprintf(a.stdout, "nothing to unlock: %s was released meanwhile\n", name)
		return silent(exitNotFound)
	}
	fmt.Fprintf(a.stdout, "force-unlocked %s: key deleted, %s\n", name, woken)
	return nil
}

// forceHandle returns the handle whose ForceUnlock suits the lock st shows, as Java's
// forceUnlock on the same object would run it, and what that publishes:
//   - a fair lock: its queue stays, and "0" wakes the first waiter on its own channel;
//   - a read-write lock: the handle of its mode, which deletes the lock only if it is still
//     in that mode (a change of mode meanwhile leaves it alone) and publishes "0";
//   - any other lock: "0" on the lock's channel.
func forceHandle(lc *rlock.Client, st *lockState) (*rlock.Lock, string) {
	switch {
	case st.Kind == kindReadWrite && st.Mode == "write":
		return lc.NewReadWriteLock(st.Name).WriteLock(), fmt.Sprintf("\"0\" published on %s (write mode)", st.Channel)
	case st.Kind == kindReadWrite:
		return lc.NewReadWriteLock(st.Name).ReadLock(), fmt.Sprintf("\"0\" published on %s (read mode)", st.Channel)
	case st.Variant == variantFair:
		return lc.NewFairLock(st.Name), fmt.Sprintf("\"0\" published to the first waiter (%s:<field>), queue kept", st.Channel)
	}
	return lc.NewLock(st.Name), fmt.Sprintf("\"0\" published on %s", st.Channel)
}

// nothingToUnlock prints why st cannot be force-unlocked and returns the exit error, or
// returns nil when st is a lock, a fair lock or a read-write lock in read or write mode.
func (a *app) nothingToUnlock(st *lockState, meanwhile bool) error {
	switch {
	case st.isLock(), st.Kind == kindReadWrite && (st.Mode == "read" || st.Mode == "write"):
		return nil
	case st.Kind == kindNotFound && meanwhile:
		fmt.Fprintf(a.stdout, "nothing to unlock: %s was released meanwhile\n", st.Name)
	case st.Kind == kindNotFound:
		fmt.Fprintf(a.stdout, "nothing to unlock: %s does not exist (the lock is free)\n", st.Name)
	default:
		fmt.Fprint(a.stdout, st.text())
		fmt.Fprintf(a.stdout, "nothing to unlock: %s is not a Redisson RLock; force-unlock never deletes other keys\n", st.Name)
	}
	return silent(exitNotFound)
}

// readAnswer reads one line from in, giving up when ctx ends (Ctrl-C).
func readAnswer(ctx context.Context, in io.Reader) (string, error) {
	type result struct {
		line string
		err  error
	}
	ch := make(chan result, 1)
	go func() {
		line, err := bufio.NewReader(in).ReadString('\n')
		ch <- result{line, err}
	}()
	select {
	case r := <-ch:
		return r.line, r.err
	case <-ctx.Done():
		return "", ctx.Err()
	}
}
