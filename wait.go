package proclock

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/proclock/proclock/internal/lockrec"
	"github.com/proclock/proclock/platform"
)

// Back-off between attempts of a waiting Acquire: randomised so that
// waiters spread out, bounded so that a freed lock is noticed soon. After
// a pause that the platform's wake-up source ended, the back-off starts
// again from backoffWoken. A wait that a kept watch (platform.Watcher)
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
// Every wait between and within attempts goes through the platform's one
// pause (Platform.Pause), under one kept watch of the lock's names
// (Platform.Watching), set up by the first wait: a holder that lets go
// while this waiter attempts ends its next wait at once.
//
// A herd of waiters all wake when the holder lets go, and one of them
// wins. The others' next attempt finds the winner holding (its mark, a
// live process): they go back to a long wait on it, instead of trying
// again soon, which only a release still under way deserves (a SQLite
// holder removes its mark a moment before it lets go of the lock).
func attemptUntil(ctx context.Context, p *platform.Platform, t lockTarget, opts Options) (*Lock, error) {
	ctx, stop := p.Watching(ctx)
	defer stop()
	_, kept := p.Wake.(platform.Watcher)
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
		if !opts.Wait || !errors.Is(err, ErrHeld) {
			return nil, err
		}
		pid := livePID(p, err)
		d := jitter(step)
		if kept && pid > 0 {
			d = jitter(backoffWatched)
		}
		woke, cerr := p.Pause(ctx, t.dir, names, pid, d)
		if cerr != nil {
			return nil, fmt.Errorf("%w while waiting: %w", cerr, err)
		}
		step = min(2*step, backoffMax)
		if woke {
			// The lock is changing hands: should the next attempt lose
			// to a release still under way, the one after comes soon.
			step = backoffWoken
		}
	}
}

// livePID is the pid of the holder that held names, when it runs on this
// host, boot and pid namespace for certain; else 0: no process to watch.
func livePID(p *platform.Platform, held error) int {
	h, ok := errors.AsType[*HeldError](held)
	if !ok || h.Holder == nil || p.Process == nil {
		return 0
	}
	here, err := p.Process.Self()
	if err != nil {
		return 0
	}
	if j := platform.Judge(here, *h.Holder, p.Process.Lookup); j.Reason != platform.ReasonRunning {
		return 0
	}
	return h.Holder.PID
}

// jitter picks a duration in [d/2, d].
func jitter(d time.Duration) time.Duration {
	return d/2 + rand.N(d/2+1)
}
