package proclock

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/proclock/proclock/internal/lockrec"
	"github.com/proclock/proclock/internal/sqlitelock"
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

// herdStagger bounds the moment a waiter that is one of a herd waits,
// once woken, before it looks whether another has taken the lock.
const herdStagger = 2 * time.Millisecond

// herdDelay picks that moment for a waiter through p (tests choose it).
var herdDelay = func(*platform.Platform) time.Duration { return rand.N(herdStagger) }

// attemptUntil makes attempts at t until one holds the lock, or, with
// opts.Wait unset, the first says it is held; with Wait, until ctx ends.
// Every wait between and within attempts goes through the platform's one
// pause (Platform.Pause), under one kept watch of the lock's names
// (Platform.Watching), set up by the first wait: a holder that lets go
// while this waiter attempts ends its next wait at once.
//
// A herd of waiters all wake when the holder lets go, and one of them
// wins. The others' next attempt finds the winner holding (its mark or
// stamp, a live process): they go back to a long wait on it, instead of
// trying again soon, which only a release still under way deserves (a
// SQLite holder removes its mark a moment before it lets go of the lock).
// A waiter that lost so (another than the holder it waited on holds since
// it woke) knows it is one of a herd: from then on, woken, it waits a
// random moment of up to herdStagger and looks at the lock's files (a
// read, not an attempt) before it attempts, so that most of the herd find
// the one that went first holding, and wait on it without trying.
func attemptUntil(ctx context.Context, p *platform.Platform, t lockTarget, opts Options) (*Lock, error) {
	ctx, stop := p.Watching(ctx)
	defer stop()
	_, kept := p.Wake.(platform.Watcher)
	var names []string // lockrec.Watched(t.path), once there is a wait
	step := backoffFirst
	var held error // the last attempt's
	wait := func(pid int) (woke bool, err error) {
		if names == nil {
			names = lockrec.Watched(t.path)
		}
		d := jitter(step)
		if kept && pid > 0 {
			d = jitter(backoffWatched)
		}
		woke, err = p.Pause(ctx, t.dir, names, pid, d)
		if err != nil {
			return false, fmt.Errorf("%w while waiting: %w", err, held)
		}
		step = min(2*step, backoffMax)
		if woke {
			// The lock is changing hands: should the next attempt lose
			// to a release still under way, the one after comes soon.
			step = backoffWoken
		}
		return woke, nil
	}
	herd, woke := false, false
	changing := false // woken since the last holder was seen
	last := 0         // that holder's pid
	for first := true; ; first = false {
		if woke && herd {
			if _, err := p.Pause(ctx, t.dir, names, 0, herdDelay(p)); err != nil {
				return nil, fmt.Errorf("%w while waiting: %w", err, held)
			}
			if pid := holderNow(p, t.path); pid > 0 {
				last = pid
				var err error
				if woke, err = wait(pid); err != nil {
					return nil, err
				}
				changing = woke
				continue
			}
		}
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
		held = err
		pid := 0
		if h, ok := errors.AsType[*HeldError](err); ok {
			pid = livePID(p, h.Holder)
		}
		if pid > 0 {
			// Another than the one seen before holds, since a wake-up
			// (not the kept watch's first, which sees the same holder).
			herd = herd || (changing && last > 0 && pid != last)
			last, changing = pid, false
		}
		if first && pid == 0 {
			// No live holder named: the lock may be changing hands (a
			// release under way, whose mark is gone, or a winner that
			// has not written its own), maybe while the first attempt's
			// last retry failed. Soon, then.
			step = backoffWoken
		}
		if woke, err = wait(pid); err != nil {
			return nil, err
		}
		changing = changing || woke
	}
}

// holderNow is the pid of the holder the lock's files name now (its
// mark's writer, or its stamp's), alive on this host; else 0.
func holderNow(p *platform.Platform, path string) int {
	if r := lockrec.ReadHolder(p.FS, path); r != nil {
		return livePID(p, r.Holder())
	}
	return livePID(p, readStampHolder(p, path))
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
