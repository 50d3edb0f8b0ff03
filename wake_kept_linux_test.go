package proclock_test

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/proclock/proclock"
	"github.com/proclock/proclock/internal/wake"
	"github.com/proclock/proclock/platform"
)

// releasingWaker wraps the native Waker. The first wait on pid (the
// waiter's wait on its holder, after an attempt found the lock held)
// first calls release, and then waits: the holder lets go after the
// waiter's attempt and before its wait, the moment a watch set up for
// each wait misses. The wait's wake-up comes on got. With kept set, it
// offers the native kept watch (wake.Watcher); without, each wait is
// watched anew.
type releasingWaker struct {
	inner   platform.Waker
	pid     int
	release func()
	once    sync.Once
	got     chan platform.Wakeup
}

func (r *releasingWaker) around(pid int, wait func() (platform.Wakeup, error)) (platform.Wakeup, error) {
	fired := false
	if pid == r.pid {
		r.once.Do(func() { r.release(); fired = true })
	}
	why, err := wait()
	if fired {
		r.got <- why
	}
	return why, err
}

func (r *releasingWaker) Wait(ctx context.Context, dir string, names []string, pid int, d time.Duration) (platform.Wakeup, error) {
	return r.around(pid, func() (platform.Wakeup, error) { return r.inner.Wait(ctx, dir, names, pid, d) })
}

type keptReleasingWaker struct{ *releasingWaker }

func (r keptReleasingWaker) Watch(dir string, names []string) (wake.Watch, error) {
	w, err := r.inner.(wake.Watcher).Watch(dir, names)
	return releasingWatch{w, r.releasingWaker}, err
}

type releasingWatch struct {
	wake.Watch
	r *releasingWaker
}

func (w releasingWatch) Wait(ctx context.Context, pid int, d time.Duration) (platform.Wakeup, error) {
	return w.r.around(pid, func() (platform.Wakeup, error) { return w.Watch.Wait(ctx, pid, d) })
}

// A holder that lets go while its waiter makes an attempt is not missed:
// the acquisition's kept watch has queued the change, and the waiter's
// next wait ends at once (WakeChange). A watch set up for each wait, as a
// Waker without the kept watch has, misses that release: its wait ends
// by its time (WakeTimeout), and only the next attempt finds the lock free.
// The file mechanism's: a SQLite waiter waits in the kernel's queue, not
// on the wake-up source.
func TestReleaseDuringAttemptWakesNextWait(t *testing.T) {
	if platform.Native().Wake == nil {
		t.Skip("no native wake-up source on this system")
	}
	for _, mech := range []proclock.Mechanism{proclock.MechanismFile} {
		for _, kept := range []bool{true, false} {
			name := string(mech) + "/kept"
			want := platform.WakeChange
			if !kept {
				name, want = string(mech)+"/each wait", platform.WakeTimeout
			}
			t.Run(name, func(t *testing.T) {
				hp := nativePlatform(mech)
				if hp.SQLite == nil && hp.Process == nil {
					t.Skip("the file mechanism needs this process's identity, and the native platform has no Process here")
				}
				// The holder: a platform of its own, as another
				// process's as far as turns go.
				hp.FS = withRanges(&distinctFS{hp.FS}, hp.FS)
				if hp.SQLite != nil {
					hp.SQLite = &distinctSQLite{hp.SQLite}
				}
				path := filepath.Join(t.TempDir(), "app.lock")
				ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
				defer cancel()
				l, err := proclock.Acquire(ctx, hp, path, proclock.Options{})
				if err != nil {
					t.Fatal(err)
				}
				wp := nativePlatform(mech)
				r := &releasingWaker{inner: wp.Wake, pid: os.Getpid(), got: make(chan platform.Wakeup, 1),
					release: func() {
						if err := l.Release(); err != nil {
							t.Error(err)
						}
					}}
				wp.Wake = r
				if kept {
					wp.Wake = keptReleasingWaker{r}
				}
				got, err := proclock.Acquire(ctx, wp, path, proclock.Options{Wait: true})
				if err != nil {
					t.Fatal(err)
				}
				defer got.Release()
				select {
				case why := <-r.got:
					if why != want {
						t.Errorf("the wait after the release during the attempt ended by %v; want %v", why, want)
					}
				default:
					t.Fatal("the waiter never waited on its holder")
				}
			})
		}
	}
}
