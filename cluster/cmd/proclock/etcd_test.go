package main

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/proclock/proclock"
	"github.com/proclock/proclock/cluster"
	"github.com/proclock/proclock/internal/cli"
)

// TestAcquireErrorCodes: what cluster.Acquire returns becomes the error
// whose exit code docs/command.md gives: a lease that expired before its
// key was written (review finding 12: "etcdserver: requested lease not
// found", exit 2 before) is a server too slow, exit 123 (ErrUnreachable);
// a waiter's own lease that died while it waited is a loss (exit 125;
// issue 29: 2 or 123 before, by the cause); a held lock stays held;
// anything else stays as it is.
func TestAcquireErrorCodes(t *testing.T) {
	tg := &etcdTarget{b: newEtcdBackend(), endpoints: []string{"127.0.0.1:2379"}, name: "jobs/x"}
	other := errors.New("something else")
	for _, tc := range []struct {
		name                    string
		err                     error
		unreachable, held, lost bool
	}{
		{"every lease gone before its key", &proclock.Error{Op: "acquire", Path: "jobs/x", Err: fmt.Errorf("%w: 3 leases", cluster.ErrLeaseGone)}, true, false, false},
		{"lease gone while waiting", lostWaiting(cluster.ErrLeaseGone), false, false, true},
		{"deadline while waiting", lostWaiting(cluster.ErrDeadline), false, false, true},
		{"key gone while waiting", lostWaiting(cluster.ErrKeyGone), false, false, true},
		{"wait ran out", fmt.Errorf("%w while waiting: %w", context.DeadlineExceeded, &proclock.HeldError{Path: "jobs/x"}), false, true, false},
		{"held", &proclock.HeldError{Path: "jobs/x"}, false, true, false},
		{"other", other, false, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := tg.acquireError(tc.err)
			if errors.Is(got, cli.ErrUnreachable) != tc.unreachable || errors.Is(got, proclock.ErrHeld) != tc.held || errors.Is(got, proclock.ErrLost) != tc.lost {
				t.Fatalf("acquireError(%v) = %v: unreachable %v, held %v, lost %v; want %v, %v, %v",
					tc.err, got, errors.Is(got, cli.ErrUnreachable), errors.Is(got, proclock.ErrHeld), errors.Is(got, proclock.ErrLost), tc.unreachable, tc.held, tc.lost)
			}
			if !errors.Is(got, tc.err) {
				t.Fatalf("acquireError(%v) = %v, which does not wrap it", tc.err, got)
			}
		})
	}
}

// lostWaiting is cluster.Acquire's error for a waiter whose lease died.
func lostWaiting(cause error) error {
	return &proclock.Error{Op: "acquire", Path: "jobs/x",
		Err: fmt.Errorf("lease lost while waiting: %w", &proclock.LostError{Path: "jobs/x", Err: cause})}
}
