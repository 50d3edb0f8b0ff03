package platform_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/proclock/proclock/internal/locktest"
	"github.com/proclock/proclock/internal/wake"
	"github.com/proclock/proclock/platform"
)

// Long enough that a wait that should wake never ends by its time on a
// busy machine, short enough that a failing test ends.
const wakeLong = 20 * time.Second

// waitResult is what a Wait returned.
type waitResult struct {
	why platform.Wakeup
	err error
}

// startWait starts a Wait of the linux Waker in a goroutine and returns,
// once it watches, the channel its result comes on.
func startWait(t *testing.T, ctx context.Context, dir string, names []string, pid int, d time.Duration) <-chan waitResult {
	t.Helper()
	armed := make(chan struct{})
	w := platform.NewTestWaker(func() { close(armed) })
	res := make(chan waitResult, 1)
	go func() {
		why, err := w.Wait(ctx, dir, names, pid, d)
		res <- waitResult{why, err}
	}()
	select {
	case <-armed:
	case r := <-res:
		t.Fatalf("Wait returned %v, %v before it watched", r.why, r.err)
	}
	return res
}

func writeFile(t *testing.T, name string) {
	t.Helper()
	if err := os.WriteFile(name, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// A watched name going away, after the watch is armed, wakes the Wait
// with WakeChange: removed, renamed away, or its directory removed.
func TestWakerChange(t *testing.T) {
	cases := []struct {
		name string
		op   func(t *testing.T, dir string)
	}{
		{"remove", func(t *testing.T, dir string) { must(t, os.Remove(filepath.Join(dir, "app.lock"))) }},
		{"remove other watched", func(t *testing.T, dir string) { must(t, os.Remove(filepath.Join(dir, "app.lock.holder"))) }},
		{"rename away", func(t *testing.T, dir string) {
			must(t, os.Rename(filepath.Join(dir, "app.lock"), filepath.Join(dir, "aside")))
		}},
		{"directory removed", func(t *testing.T, dir string) {
			for _, f := range []string{"app.lock", "app.lock.holder", "tmp"} {
				must(t, os.Remove(filepath.Join(dir, f)))
			}
			must(t, os.Remove(dir))
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "locks")
			must(t, os.Mkdir(dir, 0o755))
			for _, f := range []string{"app.lock", "app.lock.holder", "tmp"} {
				writeFile(t, filepath.Join(dir, f))
			}
			res := startWait(t, context.Background(), dir, []string{"app.lock", "app.lock.holder"}, 0, wakeLong)
			c.op(t, dir)
			if r := <-res; r.why != platform.WakeChange || r.err != nil {
				t.Errorf("Wait = %v, %v; want change, nil", r.why, r.err)
			}
		})
	}
}

// Nothing else wakes the Wait: it returns when its time is up, saying so.
// Not a watched name created, renamed onto or linked (someone taking the
// lock), nor one read, written or closed (as every waiter does on each
// attempt), nor what happens to other names.
func TestWakerIgnores(t *testing.T) {
	dir := t.TempDir()
	lock, holder := filepath.Join(dir, "app.lock"), filepath.Join(dir, "app.lock.holder")
	for _, f := range []string{"tmp", "tmp2", "other"} {
		writeFile(t, filepath.Join(dir, f))
	}
	res := startWait(t, context.Background(), dir, []string{"app.lock", "app.lock.holder", "app.lock.stale"}, 0, 100*time.Millisecond)

	writeFile(t, lock)
	must(t, os.Rename(filepath.Join(dir, "tmp"), holder))
	must(t, os.Link(filepath.Join(dir, "tmp2"), filepath.Join(dir, "app.lock.stale")))
	f, err := os.OpenFile(lock, os.O_RDWR, 0)
	must(t, err)
	_, err = f.Write([]byte("stamp"))
	must(t, err)
	must(t, f.Close())
	_, err = os.ReadFile(lock)
	must(t, err)
	must(t, os.Chmod(lock, 0o600))
	must(t, os.Rename(filepath.Join(dir, "other"), filepath.Join(dir, "other2")))
	must(t, os.Remove(filepath.Join(dir, "other2")))
	writeFile(t, filepath.Join(dir, "app.lock.holder.tmp"))
	must(t, os.Remove(filepath.Join(dir, "app.lock.holder.tmp")))

	if r := <-res; r.why != platform.WakeTimeout || r.err != nil {
		t.Errorf("Wait = %v, %v; want timeout, nil", r.why, r.err)
	}
}

// helperChild starts the test binary as a process that lives until its
// stdin closes (locktest.Block); end closes it and reaps the process.
func helperChild(t *testing.T) (pid int, end func()) {
	t.Helper()
	c := locktest.Start(t, locktest.Block.Command())
	return c.Pid(), func() { c.End() }
}

// The watched process exiting wakes the Wait with WakeExit (a pidfd).
func TestWakerProcessExit(t *testing.T) {
	pid, end := helperChild(t)
	res := startWait(t, context.Background(), t.TempDir(), []string{"app.lock"}, pid, wakeLong)
	end()
	if r := <-res; r.why != platform.WakeExit || r.err != nil {
		t.Errorf("Wait = %v, %v; want exit, nil", r.why, r.err)
	}
}

// A watched process that is gone already ends the Wait at once.
func TestWakerProcessGone(t *testing.T) {
	pid, end := helperChild(t)
	end() // exited and reaped: the pid is free
	w := platform.NewTestWaker(func() { t.Error("watched a pid that is gone") })
	why, err := w.Wait(context.Background(), t.TempDir(), []string{"app.lock"}, pid, wakeLong)
	if why != platform.WakeExit || err != nil {
		t.Errorf("Wait = %v, %v; want exit, nil", why, err)
	}
}

// ctx ending ends the Wait with ctx.Err(): cancelled while it waits, past
// its deadline, or done before it starts (then nothing is watched).
func TestWakerContext(t *testing.T) {
	t.Run("cancelled while waiting", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		res := startWait(t, ctx, t.TempDir(), []string{"app.lock"}, os.Getpid(), wakeLong)
		cancel()
		if r := <-res; !errors.Is(r.err, context.Canceled) {
			t.Errorf("Wait = %v, %v; want %v", r.why, r.err, context.Canceled)
		}
	})
	t.Run("deadline", func(t *testing.T) {
		// Long enough to be set up and watching first, even under the
		// race detector on a busy machine; far shorter than wakeLong.
		ctx, cancel := context.WithTimeout(context.Background(), 250*time.Millisecond)
		defer cancel()
		res := startWait(t, ctx, t.TempDir(), []string{"app.lock"}, 0, wakeLong)
		if r := <-res; !errors.Is(r.err, context.DeadlineExceeded) {
			t.Errorf("Wait = %v, %v; want %v", r.why, r.err, context.DeadlineExceeded)
		}
	})
	t.Run("done before", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		w := platform.NewTestWaker(func() { t.Error("watched for a done ctx") })
		if _, err := w.Wait(ctx, t.TempDir(), []string{"app.lock"}, -1, wakeLong); !errors.Is(err, context.Canceled) {
			t.Errorf("Wait = %v; want %v", err, context.Canceled)
		}
	})
}

// A directory that cannot be watched leaves the process watched, or, with
// none, a plain wait of d.
func TestWakerNoDirectory(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "missing")
	w := platform.NewTestWaker(func() { t.Error("watched a missing directory and no process") })
	if why, err := w.Wait(context.Background(), missing, []string{"app.lock"}, 0, time.Millisecond); why != platform.WakeTimeout || err != nil {
		t.Errorf("Wait = %v, %v; want timeout, nil", why, err)
	}
	pid, end := helperChild(t)
	res := startWait(t, context.Background(), missing, []string{"app.lock"}, pid, wakeLong)
	end()
	if r := <-res; r.why != platform.WakeExit || r.err != nil {
		t.Errorf("Wait = %v, %v; want exit, nil", r.why, r.err)
	}
}

// 1000 waits of every kind (time up, a change, the process gone, ctx
// cancelled while waiting) leave this process's descriptors and goroutines
// as they were, once a first wait has left its inotify instance idle for
// the next.
func TestWakerNoLeaks(t *testing.T) {
	dir := t.TempDir()
	lock := filepath.Join(dir, "app.lock")
	gonePID, end := helperChild(t)
	end()
	names := []string{"app.lock"}
	waker := platform.Native().Wake
	waker.Wait(context.Background(), dir, names, 0, time.Microsecond)

	before, goroutines := openFDs(t), runtime.NumGoroutine()
	for i := range 1000 {
		switch i % 4 {
		case 0: // time up, watching this process too
			if why, err := waker.Wait(context.Background(), dir, names, os.Getpid(), time.Microsecond); why != platform.WakeTimeout || err != nil {
				t.Fatalf("wait %d: %v, %v", i, why, err)
			}
		case 1: // a change
			writeFile(t, lock)
			res := startWait(t, context.Background(), dir, names, os.Getpid(), wakeLong)
			must(t, os.Remove(lock))
			if r := <-res; r.why != platform.WakeChange {
				t.Fatalf("wait %d: %v, %v", i, r.why, r.err)
			}
		case 2: // the process gone
			if why, err := waker.Wait(context.Background(), dir, names, gonePID, wakeLong); why != platform.WakeExit || err != nil {
				t.Fatalf("wait %d: %v, %v", i, why, err)
			}
		case 3: // cancelled
			ctx, cancel := context.WithCancel(context.Background())
			res := startWait(t, ctx, dir, names, os.Getpid(), wakeLong)
			cancel()
			if r := <-res; !errors.Is(r.err, context.Canceled) {
				t.Fatalf("wait %d: %v, %v", i, r.why, r.err)
			}
		}
	}
	// The test's own goroutines that sent a result are ending: let them.
	for range 100_000 {
		if runtime.NumGoroutine() <= goroutines {
			break
		}
		runtime.Gosched()
	}
	if after := openFDs(t); after != before {
		t.Errorf("open descriptors: %d before 1000 waits, %d after", before, after)
	}
	if after := runtime.NumGoroutine(); after > goroutines {
		t.Errorf("goroutines: %d before 1000 waits, %d after", goroutines, after)
	}
}

// openFDs counts this process's open file descriptors.
func openFDs(t *testing.T) int {
	t.Helper()
	fds, err := os.ReadDir("/proc/self/fd")
	must(t, err)
	return len(fds)
}

// Waits at once each watch with an inotify instance of their own; once
// they are over, no more than a few are kept.
func TestWakerKeepsFew(t *testing.T) {
	dir := t.TempDir()
	before := openFDs(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var results []<-chan waitResult
	for range 16 {
		results = append(results, startWait(t, ctx, dir, []string{"app.lock"}, 0, wakeLong))
	}
	// Each holds an eventfd and an inotify instance, of which up to 4
	// may have been idle before.
	if during := openFDs(t); during < before+32-4 {
		t.Errorf("%d descriptors open during 16 waits, %d before: want 2 more each, less 4 idle at most", during, before)
	}
	cancel()
	for _, res := range results {
		if r := <-res; !errors.Is(r.err, context.Canceled) {
			t.Errorf("Wait = %v, %v; want %v", r.why, r.err, context.Canceled)
		}
	}
	if after := openFDs(t); after > before+4 {
		t.Errorf("%d descriptors open after 16 waits, %d before: want 4 more at most", after, before)
	}
}

// A kept watch sees a name that went away between its waits (while the
// waiter made its attempt): the next Wait ends at once with WakeChange.
// Told once, the change wakes no later Wait.
func TestWatchKeepsChangesBetweenWaits(t *testing.T) {
	dir := t.TempDir()
	lock := filepath.Join(dir, "app.lock")
	writeFile(t, lock)
	w, err := platform.NewTestWaker(nil).(wake.Watcher).Watch(dir, []string{"app.lock"})
	must(t, err)
	defer w.Close()
	must(t, os.Remove(lock)) // no Wait is going on
	if why, err := w.Wait(context.Background(), 0, wakeLong); why != platform.WakeChange || err != nil {
		t.Errorf("Wait after the removal = %v, %v; want change, nil", why, err)
	}
	if why, err := w.Wait(context.Background(), 0, time.Millisecond); why != platform.WakeTimeout || err != nil {
		t.Errorf("Wait after the change was told = %v, %v; want timeout, nil", why, err)
	}
	writeFile(t, lock)
	must(t, os.Remove(lock))
	if why, err := w.Wait(context.Background(), 0, wakeLong); why != platform.WakeChange || err != nil {
		t.Errorf("Wait after a second removal = %v, %v; want change, nil", why, err)
	}
}

// A kept watch follows the pid each Wait names: the exit of the one
// watched now wakes it, and one that is gone ends it at once.
func TestWatchFollowsPID(t *testing.T) {
	dir := t.TempDir()
	first, endFirst := helperChild(t)
	second, endSecond := helperChild(t)
	w, err := platform.NewTestWaker(nil).(wake.Watcher).Watch(dir, []string{"app.lock"})
	must(t, err)
	defer w.Close()
	if why, err := w.Wait(context.Background(), first, time.Millisecond); why != platform.WakeTimeout || err != nil {
		t.Fatalf("Wait on a live pid = %v, %v; want timeout, nil", why, err)
	}
	endFirst()
	if why, err := w.Wait(context.Background(), first, wakeLong); why != platform.WakeExit || err != nil {
		t.Errorf("Wait on the pid that exited = %v, %v; want exit, nil", why, err)
	}
	res := make(chan waitResult, 1)
	go func() {
		why, err := w.Wait(context.Background(), second, wakeLong)
		res <- waitResult{why, err}
	}()
	endSecond()
	if r := <-res; r.why != platform.WakeExit || r.err != nil {
		t.Errorf("Wait on the second pid = %v, %v; want exit, nil", r.why, r.err)
	}
}

// A kept watch's Wait that ctx ended leaves the next Wait, under another
// ctx, to wait its own time (the eventfd is reset).
func TestWatchContextThenWait(t *testing.T) {
	dir := t.TempDir()
	armed := make(chan struct{}, 1)
	w, err := platform.NewTestWaker(func() { armed <- struct{}{} }).(wake.Watcher).Watch(dir, []string{"app.lock"})
	must(t, err)
	defer w.Close()
	ctx, cancel := context.WithCancel(context.Background())
	res := make(chan waitResult, 1)
	go func() {
		why, err := w.Wait(ctx, os.Getpid(), wakeLong)
		res <- waitResult{why, err}
	}()
	<-armed
	cancel()
	if r := <-res; !errors.Is(r.err, context.Canceled) {
		t.Fatalf("Wait = %v, %v; want %v", r.why, r.err, context.Canceled)
	}
	go func() { <-armed }()
	if why, err := w.Wait(context.Background(), os.Getpid(), time.Millisecond); why != platform.WakeTimeout || err != nil {
		t.Errorf("Wait after a cancelled one = %v, %v; want timeout, nil", why, err)
	}
}

// Under wake.Watching, Pauses share one kept watch: the first sets it
// up and ends at once (what went before was not watched), a name that
// goes away between Pauses ends the next at once, and stop leaves no
// descriptor open.
func TestPlatformWatching(t *testing.T) {
	dir := t.TempDir()
	lock := filepath.Join(dir, "app.lock")
	names := []string{"app.lock"}
	p := &platform.Platform{Wake: platform.NewTestWaker(nil)}
	before := openFDs(t)
	ctx, stop := wake.Watching(context.Background(), p)
	if again, stopAgain := wake.Watching(ctx, p); again != ctx {
		t.Error("Watching under a Watching context made another")
	} else {
		stopAgain()
	}
	woke, err := wake.Pause(ctx, p, dir, names, 0, wakeLong)
	if !woke || err != nil {
		t.Fatalf("first Pause = %v, %v; want woke at once", woke, err)
	}
	if woke, err := wake.Pause(ctx, p, dir, names, 0, time.Millisecond); woke || err != nil {
		t.Errorf("second Pause = %v, %v; want its time up", woke, err)
	}
	writeFile(t, lock)
	must(t, os.Remove(lock)) // between Pauses
	if woke, err := wake.Pause(ctx, p, dir, names, 0, wakeLong); !woke || err != nil {
		t.Errorf("Pause after a removal = %v, %v; want woke", woke, err)
	}
	stop()
	if after := openFDs(t); after != before {
		t.Errorf("open descriptors: %d before, %d after stop", before, after)
	}
}
