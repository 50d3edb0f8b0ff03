package proclock

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/proclock/proclock/platform"
)

// Back-off between attempts of a waiting Acquire: randomised so that
// waiters spread out, bounded so that a freed lock is noticed soon.
const (
	backoffFirst = 4 * time.Millisecond
	backoffMax   = 100 * time.Millisecond
)

// attemptUntil makes attempts at t until one holds the lock, or, with
// opts.Wait unset, the first says it is held; with Wait, until ctx ends.
// Every wait between attempts goes through pause, the one place a wake-up
// source can slot in.
func attemptUntil(ctx context.Context, p *platform.Platform, t lockTarget, opts Options) (*Lock, error) {
	step := backoffFirst
	for first := true; ; first = false {
		l, err := t.mech.attempt(ctx, first, opts)
		if err == nil {
			if cerr := ctx.Err(); cerr != nil {
				// Obtained after the caller gave up: not theirs to hold.
				l.release()
				return nil, fmt.Errorf("proclock: acquire %s: %w", t.path, cerr)
			}
			return l, nil
		}
		if !opts.Wait || !errors.Is(err, ErrHeld) {
			return nil, err
		}
		if cerr := pause(ctx, p, jitter(step)); cerr != nil {
			return nil, fmt.Errorf("%w while waiting: %w", cerr, err)
		}
		step = min(2*step, backoffMax)
	}
}

// pause waits d before the next attempt, or until ctx ends.
func pause(ctx context.Context, p *platform.Platform, d time.Duration) error {
	return p.Time().Sleep(ctx, d)
}

// jitter picks a duration in [d/2, d].
func jitter(d time.Duration) time.Duration {
	return d/2 + rand.N(d/2+1)
}
