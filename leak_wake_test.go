package proclock_test

import (
	"context"
	"time"

	"github.com/proclock/proclock/platform"
)

// leakPauseWaker tells, on pauses, when an Acquire waits through a
// platform's wake-up source (a short retry, a pause between attempts), as
// leakPauseClock does for its clock.
type leakPauseWaker struct {
	platform.Waker
	pauses chan struct{}
}

func (w leakPauseWaker) Wait(ctx context.Context, dir string, names []string, pid int, d time.Duration) (platform.Wakeup, error) {
	select {
	case w.pauses <- struct{}{}:
	default:
	}
	return w.Waker.Wait(ctx, dir, names, pid, d)
}
