package proclock_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/proclock/proclock"
	"github.com/proclock/proclock/internal/lockrec"
	"github.com/proclock/proclock/internal/locktest"
	"github.com/proclock/proclock/platform"
)

// queueHead, given a lock's path, joins the queue behind its bell as a
// waiting Acquire does, leads it (nobody else waits yet), says "head",
// and waits until it is killed.
var queueHead = locktest.NewRole("queue-head", func(args []string) int {
	path := args[0]
	q, ok := platform.Native().Wake.(platform.Queuer)
	if !ok {
		fmt.Fprintln(os.Stderr, "no queue")
		return 2
	}
	w, err := q.Queue(filepath.Dir(path), lockrec.Watched(path), lockrec.Bell(path))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	if why, err := w.Wait(context.Background(), 0, time.Minute); why != platform.WakeChange || err != nil {
		fmt.Fprintln(os.Stderr, "did not lead:", why, err)
		return 2
	}
	fmt.Println("head")
	select {} // until killed
})

// The queue's head is SIGKILLed while a waiter waits behind it, and then
// the holder too: no ring comes, and nobody watches the holder; the
// waiter behind reaches the bound of its wait, leads, finds the holder
// dead and takes the lock (docs/protocol.md, "One waiter woken per
// release": a crash costs one bound). A queue whose waiters behind the
// head slept until a ring would keep it out for ever.
func TestQueueHeadKilledKeepsNoOneOut(t *testing.T) {
	for _, mech := range mechanisms {
		t.Run(string(mech), func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "app.lock")
			holder := locktest.Start(t, handoffHolder.Command(string(mech), path))
			if line, err := holder.Line(); err != nil || line != "held" {
				t.Fatalf("holder process: %q, %v", line, err)
			}
			head := locktest.Start(t, queueHead.Command(path))
			if line, err := head.Line(); err != nil || line != "head" {
				t.Fatalf("head process: %q, %v", line, err)
			}
			ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
			defer cancel()
			waiter := nativePlatform(mech)
			got := make(chan error, 1)
			go func() {
				l, err := proclock.Acquire(ctx, waiter, path, proclock.Options{Wait: true})
				if err == nil {
					err = l.Release()
				}
				got <- err
			}()
			// The waiter has queued once it holds the bell open; it
			// then tries to lead, before or after the kill.
			bell := filepath.Join(filepath.Dir(path), lockrec.Bell(path))
			for !holdsOpen(t, bell) {
				if ctx.Err() != nil {
					t.Fatal("the waiter never queued")
				}
				runtime.Gosched()
			}
			head.Cmd.Process.Signal(syscall.SIGKILL)
			head.Wait()
			holder.Cmd.Process.Signal(syscall.SIGKILL)
			holder.Wait()
			if err := <-got; err != nil {
				t.Fatalf("the waiter behind a killed head, its holder killed too: %v", err)
			}
		})
	}
}

// holdsOpen reports whether this process has a descriptor open on name.
func holdsOpen(t *testing.T, name string) bool {
	t.Helper()
	open, err := opens("self", name)
	if err != nil {
		t.Fatal(err)
	}
	return open
}

// opens reports whether process pid ("self": this one) has a descriptor
// open on name; false when name is not there.
func opens(pid, name string) (bool, error) {
	want, err := os.Stat(name)
	if err != nil {
		return false, nil
	}
	fdDir := filepath.Join("/proc", pid, "fd")
	fds, err := os.ReadDir(fdDir)
	if err != nil {
		return false, err
	}
	for _, fd := range fds {
		if st, err := os.Stat(filepath.Join(fdDir, fd.Name())); err == nil && os.SameFile(st, want) {
			return true, nil
		}
	}
	return false, nil
}

// A lock whose base name is 255 bytes (NAME_MAX), in a directory that
// makes its path some 2000 bytes long: "P.bell" would be 260 bytes, so the
// bell's name is shortened as every sidecar's is (lockrec.SidecarName), and
// a waiter still queues behind a FIFO of that name and takes the lock when
// the holder dies, with no error. (That the head is woken, not left to
// its bound, is the platform's queue tests'.)
func TestQueueNameMax(t *testing.T) {
	for _, mech := range mechanisms {
		t.Run(string(mech), func(t *testing.T) {
			dir := t.TempDir()
			for len(dir) < 1700 {
				dir = filepath.Join(dir, strings.Repeat("d", 200))
			}
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(dir, strings.Repeat("n", lockrec.NameMax))
			bell := lockrec.Sidecar(path, lockrec.BellSuffix)
			if n := len(filepath.Base(bell)); n > lockrec.NameMax {
				t.Fatalf("the bell's name is %d bytes", n)
			}
			holder := locktest.Start(t, handoffHolder.Command(string(mech), path))
			if line, err := holder.Line(); err != nil || line != "held" {
				t.Fatalf("holder process: %q, %v", line, err)
			}
			ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
			defer cancel()
			got := make(chan error, 1)
			go func() {
				l, err := proclock.Acquire(ctx, nativePlatform(mech), path, proclock.Options{Wait: true})
				if err == nil {
					err = l.Release()
				}
				got <- err
			}()
			for !holdsOpen(t, bell) {
				if ctx.Err() != nil {
					t.Fatalf("the waiter never queued behind %s (%d bytes)", filepath.Base(bell), len(filepath.Base(bell)))
				}
				runtime.Gosched()
			}
			if st, err := os.Lstat(bell); err != nil || st.Mode()&os.ModeNamedPipe == 0 {
				t.Fatalf("the bell: %v, %v; want a FIFO", st, err)
			}
			holder.Kill()
			if err := <-got; err != nil {
				t.Fatalf("a waiter of a %d-byte path, its holder killed: %v", len(path), err)
			}
		})
	}
}
