package peer

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/proclock/proclock/internal/wake"
	"github.com/proclock/proclock/platform"
)

// waitsOver is the shortest acquisition whose waits a chaos peer writes
// down (ChaosPlan.Waits).
const waitsOver = 10 * time.Millisecond

// keptWaits is how many of an acquisition's last waits are written down.
const keptWaits = 12

// waitRecorder is a chaos peer's record of the waits of its acquisition
// under way: each of its platform's wake-up waits (ChaosPlan.Waits), so
// that a slow kill-to-reacquire can be told apart as a wait that ran out
// its time (no wake-up came) or one whose wake-up came late (the machine
// was busy).
type waitRecorder struct {
	inner platform.Waker
	file  string

	mu    sync.Mutex
	began time.Time
	waits []string
}

// recordWaits returns p with its waits recorded into file, and the
// recorder; p itself and nil when file is empty or p has no Waker.
func recordWaits(p *platform.Platform, file string) (*platform.Platform, *waitRecorder) {
	if file == "" || p.Wake == nil {
		return p, nil
	}
	r := &waitRecorder{inner: p.Wake, file: file}
	q := *p
	q.Wake = r
	return &q, r
}

func (r *waitRecorder) start() {
	if r == nil {
		return
	}
	r.mu.Lock()
	r.began, r.waits = time.Now(), r.waits[:0]
	r.mu.Unlock()
}

// done writes the acquisition down when it took waitsOver or more: "<pid>
// <entered unixnano> <took> <wait>...", each wait "<d>/<why>/<took>" (pid
// 0: no holder's pid watched).
func (r *waitRecorder) done(entered time.Time) {
	if r == nil {
		return
	}
	r.mu.Lock()
	took, waits := entered.Sub(r.began), strings.Join(r.waits, " ")
	r.mu.Unlock()
	if took < waitsOver {
		return
	}
	f, err := os.OpenFile(r.file, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return
	}
	defer f.Close()
	fmt.Fprintf(f, "%d %d %v %s\n", os.Getpid(), entered.UnixNano(), took.Round(10*time.Microsecond), waits)
}

func (r *waitRecorder) note(pid int, d time.Duration, why platform.Wakeup, since time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.waits) == keptWaits {
		r.waits = append(r.waits[:0], r.waits[1:]...) // the last ones tell
	}
	r.waits = append(r.waits, fmt.Sprintf("pid%d:%v/%v/%v", pid, d.Round(10*time.Microsecond), why, time.Since(since).Round(10*time.Microsecond)))
}

func (r *waitRecorder) Wait(ctx context.Context, dir string, names []string, pid int, d time.Duration) (platform.Wakeup, error) {
	t := time.Now()
	why, err := r.inner.Wait(ctx, dir, names, pid, d)
	r.note(pid, d, why, t)
	return why, err
}

// Watch keeps the inner Waker's watch, recording its waits.
func (r *waitRecorder) Watch(dir string, names []string) (wake.Watch, error) {
	w, ok := r.inner.(wake.Watcher)
	if !ok {
		return nil, fmt.Errorf("peer: %T keeps no watch", r.inner)
	}
	kept, err := w.Watch(dir, names)
	if err != nil {
		return nil, err
	}
	return recordedWatch{kept, r}, nil
}

type recordedWatch struct {
	wake.Watch
	r *waitRecorder
}

func (w recordedWatch) Wait(ctx context.Context, pid int, d time.Duration) (platform.Wakeup, error) {
	t := time.Now()
	why, err := w.Watch.Wait(ctx, pid, d)
	w.r.note(pid, d, why, t)
	return why, err
}
