package proclock_test

import (
	"context"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/proclock/proclock"
	"github.com/proclock/proclock/internal/lockrec"
	"github.com/proclock/proclock/internal/locktest"
	"github.com/proclock/proclock/platform"
)

// An acquisition that waited, queued behind the bell, returns while its
// wait's teardown (the queue left, the bell closed) is held back here; its
// caller's context ends meanwhile, and it calls Release. Release waits for
// the teardown (it is seen blocked there, and returns only once the
// teardown is over), succeeds, and leaves nothing of the wait open: the
// bell is closed, and the lock is free to another acquisition.
func TestWaitTeardownReleaseWaits(t *testing.T) {
	for _, mech := range mechanisms {
		t.Run(string(mech), func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "app.lock")
			bell := filepath.Join(filepath.Dir(path), lockrec.Bell(path))
			holder := locktest.Start(t, handoffHolder.Command(string(mech), path))
			if line, err := holder.Line(); err != nil || line != "held" {
				t.Fatalf("holder process: %q, %v", line, err)
			}
			gate := make(chan struct{})
			started := make(chan struct{}, 1)
			var tornDown atomic.Bool
			defer proclock.SetTearDown(func(stop func()) {
				started <- struct{}{}
				<-gate
				stop()
				tornDown.Store(true)
			})()
			ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
			defer cancel()
			p := nativePlatform(mech)
			// The holder is killed once the waiter waits between
			// attempts: an acquisition whose first attempt takes the lock
			// (in its busy wait or retries) tears its wait down at once.
			spy := &betweenSpy{Waker: p.Wake, between: make(chan struct{})}
			p.Wake = spy
			type acquired struct {
				l   *proclock.Lock
				err error
			}
			got := make(chan acquired, 1)
			go func() {
				l, err := proclock.Acquire(ctx, p, path, proclock.Options{Wait: true})
				got <- acquired{l, err}
			}()
			select {
			case <-spy.between:
			case <-ctx.Done():
				t.Fatal("the waiter never waited between attempts")
			}
			if !holdsOpen(t, bell) {
				t.Fatal("the waiter waits, but not queued behind the bell")
			}
			holder.Kill()
			a := <-got
			if a.err != nil {
				t.Fatalf("the waiter, its holder killed: %v", a.err)
			}
			<-started
			if !holdsOpen(t, bell) {
				t.Fatal("the bell closed before the wait's teardown ran")
			}
			cancel() // the caller's context ends while the teardown waits
			type released struct {
				err  error
				torn bool
			}
			rel := make(chan released, 1)
			go func() {
				err := a.l.Release()
				rel <- released{err, tornDown.Load()}
			}()
			for !parkedIn("github.com/proclock/proclock.(*Lock).Release") {
				select {
				case r := <-rel:
					t.Fatalf("Release returned (%v) while the wait's teardown was held back", r.err)
				default:
				}
				runtime.Gosched()
			}
			close(gate)
			r := <-rel
			if r.err != nil || !r.torn {
				t.Fatalf("Release = %v, with the wait torn down %v; want nil, true", r.err, r.torn)
			}
			if holdsOpen(t, bell) {
				t.Error("the bell is still open after Release")
			}
			l, err := proclock.Acquire(context.Background(), p, path, proclock.Options{})
			if err != nil {
				t.Fatalf("after Release, Acquire = %v", err)
			}
			if err := l.Release(); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// parkedIn reports whether a goroutine of this process is blocked on a
// channel receive in fn (a function's full name, as a stack trace names
// it).
func parkedIn(fn string) bool {
	buf := make([]byte, 64<<10)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	for g := range strings.SplitSeq(string(buf), "\n\n") {
		header, frames, _ := strings.Cut(g, "\n")
		if strings.Contains(header, "[chan receive") && strings.Contains("\n"+frames, "\n"+fn+"(") {
			return true
		}
	}
	return false
}

// betweenSpy is the native Waker, whose queue's waits close between the
// first time one is waited by attemptUntil itself, between attempts (not
// from within an attempt, a mechanism's busy wait or retries). Its watches
// do not tell the waiter's place in the queue (platform.Place: none), so
// a waiter behind attempts after each bound rather than looking first:
// the same teardown.
type betweenSpy struct {
	platform.Waker
	once    sync.Once
	between chan struct{}
}

func (s *betweenSpy) Watch(dir string, names []string) (platform.Watch, error) {
	w, err := s.Waker.(platform.Watcher).Watch(dir, names)
	return &spyWatch{w, s}, err
}

func (s *betweenSpy) Queue(dir string, names []string, bell string) (platform.Watch, error) {
	w, err := s.Waker.(platform.Queuer).Queue(dir, names, bell)
	return &spyWatch{w, s}, err
}

type spyWatch struct {
	platform.Watch
	s *betweenSpy
}

func (w *spyWatch) Wait(ctx context.Context, pid int, d time.Duration) (platform.Wakeup, error) {
	if proclock.BetweenAttempts() {
		w.s.once.Do(func() { close(w.s.between) })
	}
	return w.Watch.Wait(ctx, pid, d)
}
