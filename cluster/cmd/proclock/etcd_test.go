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
// a held lock stays held; anything else stays as it is.
func TestAcquireErrorCodes(t *testing.T) {
	tg := &etcdTarget{b: newEtcdBackend(), endpoints: []string{"127.0.0.1:2379"}, name: "jobs/x"}
	other := errors.New("something else")
	for _, tc := range []struct {
		name              string
		err               error
		unreachable, held bool
	}{
		{"every lease gone before its key", &proclock.Error{Op: "acquire", Path: "jobs/x", Err: fmt.Errorf("%w: 3 leases", cluster.ErrLeaseGone)}, true, false},
		{"lease gone while waiting", fmt.Errorf("lease lost while waiting: %w", cluster.ErrLeaseGone), true, false},
		{"deadline", fmt.Errorf("lease lost while waiting: %w", cluster.ErrDeadline), true, false},
		{"wait ran out", fmt.Errorf("%w while waiting: %w", context.DeadlineExceeded, &proclock.HeldError{Path: "jobs/x"}), false, true},
		{"held", &proclock.HeldError{Path: "jobs/x"}, false, true},
		{"other", other, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := tg.acquireError(tc.err)
			if errors.Is(got, cli.ErrUnreachable) != tc.unreachable || errors.Is(got, proclock.ErrHeld) != tc.held {
				t.Fatalf("acquireError(%v) = %v: unreachable %v, held %v; want %v, %v",
					tc.err, got, errors.Is(got, cli.ErrUnreachable), errors.Is(got, proclock.ErrHeld), tc.unreachable, tc.held)
			}
			if !errors.Is(got, tc.err) {
				t.Fatalf("acquireError(%v) = %v, which does not wrap it", tc.err, got)
			}
		})
	}
}
