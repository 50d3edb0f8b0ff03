package cli

import (
	"context"
	"fmt"
	"runtime"
	"time"

	"github.com/proclock/proclock"
	"github.com/proclock/proclock/platform"
)

// The lock on this host (a PATH) is a Target like a backend's: run and
// status take it, and the cluster's, by one path. What it has of its own
// (flock(1)'s exit code for a wait that ran out, descriptor 3 for
// COMMAND, the reason status gives for a dead holder) is asked of it by
// its type: a *hostTarget, a hostHeld.

// hostTarget is the lock at path on this host, taken through the root
// package with opts (Acquire sets Wait).
type hostTarget struct {
	p    *platform.Platform
	path string
	opts proclock.Options
}

// openTarget opens the lock name names: a backend's when one claims it,
// else the lock at PATH name on this host, with mechanism and opts.
func openTarget(backends []Backend, name, mechanism string, opts proclock.Options) (Target, error) {
	if b := claimant(backends, name); b != nil {
		return b.Open(context.Background(), name)
	}
	p, err := platformFor(mechanism)
	if err != nil {
		return nil, err
	}
	return &hostTarget{p: p, path: name, opts: opts}, nil
}

// platformFor is the native platform with the mechanism asked for.
func platformFor(mechanism string) (*platform.Platform, error) {
	p := platform.Native()
	switch mechanism {
	case "file":
		p = p.WithoutSQLite()
	case "sqlite":
		if p.SQLite == nil {
			return nil, fmt.Errorf("proclock: the sqlite mechanism is not available on %s; use --mechanism file", runtime.GOOS)
		}
	}
	return p, nil
}

func (t *hostTarget) Acquire(ctx context.Context, wait bool) (Held, error) {
	opts := t.opts
	opts.Wait = wait
	l, err := proclock.Acquire(ctx, t.p, t.path, opts)
	if err != nil {
		return nil, err
	}
	return hostHeld{l, t.p}, nil
}

func (t *hostTarget) Inspect(ctx context.Context) (Report, error) {
	st, err := proclock.Inspect(ctx, t.p, t.path)
	return Report{Status: st}, err
}

// Grace is defaultGrace unless another is asked.
func (t *hostTarget) Grace(asked time.Duration) (time.Duration, error) {
	if asked == 0 {
		return defaultGrace, nil
	}
	return asked, nil
}

func (t *hostTarget) Close() error { return nil }

// hostHeld is a held lock of this host. The library tells its loss (its
// file or .holder removed or replaced at the path, its directory gone)
// through Lock.Lost and Lock.Err; it has no deadline. On a loss, run stops
// COMMAND's group as for a cluster lock's event: SIGTERM, then SIGKILL
// after the grace, and exits 125: the path is free to take for anyone
// else at once, and COMMAND must not outlive the lock (docs/command.md,
// "When the lock is lost").
type hostHeld struct {
	*proclock.Lock
	p *platform.Platform
}

// Deadline is the zero time: a host lock is lost only by an event.
func (hostHeld) Deadline() time.Time { return time.Time{} }

// Env adds nothing: COMMAND's descriptor 3 is the lock (inheritLock).
func (hostHeld) Env() []string { return nil }

// Describe has nothing to add to the lock's path.
func (hostHeld) Describe() string { return "" }
