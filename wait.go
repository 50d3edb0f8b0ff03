package proclock

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/proclock/proclock/internal/lockrec"
	"github.com/proclock/proclock/internal/sqlitelock"
	"github.com/proclock/proclock/internal/wake"
	"github.com/proclock/proclock/platform"
)

// Back-off between attempts of a waiting Acquire: randomised so that
// waiters spread out, bounded so that a freed lock is noticed soon. After
// a pause that the platform's wake-up source ended, the back-off starts
// again from backoffWoken. A wait that a kept watch (wake.Watcher)
// serves, on a holder whose exit it watches too, waits up to
// backoffWatched: the holder's release or its death ends it, and the kept
// watch misses neither.
const (
	backoffFirst   = 4 * time.Millisecond
	backoffMax     = 100 * time.Millisecond
	backoffWoken   = 200 * time.Microsecond
	backoffWatched = time.Second
)

// attemptUntil makes attempts at t until one holds the lock, or, with
// opts.Wait unset, the first says it is held; with Wait, until ctx ends.
// A waiting SQLite attempt on linux waits in the kernel's queue itself
// (docs/design.md, "Waiting"); every other wait, between and within
// attempts, goes through the platform's one pause (wake.Pause), under
// one kept watch of the lock's names (wake.Watching), set up by the
// first wait: a holder that lets go while this waiter attempts ends its
// next wait at once.
func attemptUntil(ctx context.Context, p *platform.Platform, t lockTarget, opts Options) (*Lock, error) {
	ctx, stop := wake.Watching(ctx, p)
	defer stop()
	_, kept := p.Wake.(wake.Watcher)
	names := lockrec.Watched(t.path)
	step := backoffFirst
	for first := true; ; first = false {
		l, err := t.mech.attempt(ctx, first, opts)
		if err == nil {
			if cerr := ctx.Err(); cerr != nil {
				// Obtained after the caller gave up: not theirs to hold.
				l.release()
				return nil, cerr
			}
			return l, nil
		}
		if _, parked := errors.AsType[*sqlitelock.ParkedError](err); parked || !opts.Wait || !errors.Is(err, ErrHeld) {
			return nil, err
		}
		pid := 0
		if h, ok := errors.AsType[*HeldError](err); ok {
			pid = livePID(p, h.Holder)
		}
		d := jitter(step)
		switch {
		case kept && pid > 0:
			// The watch sees this holder let go or die.
			d = jitter(backoffWatched)
		case first && pid == 0:
			// No live holder named: the lock may be changing hands (a
			// release under way, whose mark is gone, or a winner that
			// has not written its own). Soon, then.
			d = jitter(backoffWoken)
		}
		woke, werr := wake.Pause(ctx, p, t.dir, names, pid, d)
		if werr != nil {
			return nil, fmt.Errorf("%w while waiting: %w", werr, err)
		}
		step = min(2*step, backoffMax)
		if woke {
			// The lock is changing hands: should the next attempt lose
			// to a release still under way, the one after comes soon.
			step = backoffWoken
		}
	}
}

// livePID is the pid of holder, when it runs on this host, boot and pid
// namespace for certain; else 0: no process to watch.
func livePID(p *platform.Platform, holder *platform.Identity) int {
	if holder == nil || p.Process == nil {
		return 0
	}
	here, err := p.Process.Self()
	if err != nil {
		return 0
	}
	if j := platform.Judge(here, *holder, p.Process.Lookup); j.Reason != platform.ReasonRunning {
		return 0
	}
	return holder.PID
}

// jitter picks a duration in [d/2, d].
func jitter(d time.Duration) time.Duration {
	return d/2 + rand.N(d/2+1)
}
