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

// Back-off between attempts of a waiting Acquire: randomised, bounded,
// and from backoffWoken again after a wake-up. A kept watch (wake.Watcher)
// misses neither a watched holder's release nor its death, so such a wait
// may last backoffWatched.
const (
	backoffFirst   = 4 * time.Millisecond
	backoffMax     = 100 * time.Millisecond
	backoffWoken   = 200 * time.Microsecond
	backoffWatched = time.Second
)

// attemptUntil makes attempts at t until one holds the lock, or, without
// opts.Wait, the first says it is held; with Wait, until ctx ends. Every
// wait but the kernel's queue (docs/design.md, "Waiting") goes through the
// platform's one pause, under one kept watch of the lock's names, so that
// a holder that lets go while this waiter attempts ends its next wait.
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
			pid = sqlitelock.LivePID(p, h.Holder)
		}
		d := jitter(step)
		switch {
		case kept && pid > 0:
			// The watch sees this holder let go or die.
			d = jitter(backoffWatched)
		case first && pid == 0:
			// No live holder named: the lock may be changing hands.
			d = jitter(backoffWoken)
		}
		woke, werr := wake.Pause(ctx, p, t.dir, names, pid, d)
		if werr != nil {
			return nil, fmt.Errorf("%w while waiting: %w", werr, err)
		}
		step = min(2*step, backoffMax)
		if woke {
			step = backoffWoken // changing hands: try again soon
		}
	}
}

// jitter picks a duration in [d/2, d].
func jitter(d time.Duration) time.Duration {
	return d/2 + rand.N(d/2+1)
}
