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
// again from backoffWoken.
const (
	backoffFirst = 4 * time.Millisecond
	backoffMax   = 100 * time.Millisecond
	backoffWoken = 200 * time.Microsecond
)

// attemptUntil makes attempts at t until one holds the lock, or, with
// opts.Wait unset, the first says it is held; with Wait, until ctx ends.
// Every wait between attempts goes through pause, the one place the
// platform's wake-up source (Platform.Wake) is used.
func attemptUntil(ctx context.Context, p *platform.Platform, t lockTarget, opts Options) (*Lock, error) {
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
		woke, cerr := pause(ctx, p, t, err, jitter(step))
		if cerr != nil {
			return nil, fmt.Errorf("%w while waiting: %w", cerr, err)
		}
		step = min(2*step, backoffMax)
		if woke {
			// The lock is changing hands: should the next attempt lose
			// (to another waiter, or to a SQLite holder that removes
			// .holder a moment before it lets go), the one after comes
			// soon.
			step = backoffWoken
		}
	}
}

// pause waits d before the next attempt, or until ctx ends. With the
// platform's wake-up source it ends early, reporting woke, when the lock's
// files change or the holder named by held, alive on this host, exits.
func pause(ctx context.Context, p *platform.Platform, t lockTarget, held error, d time.Duration) (woke bool, err error) {
	return p.Pause(ctx, t.dir, lockrec.Watched(t.path), livePID(p, held), d)
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
