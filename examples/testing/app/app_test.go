package app_test

// The app's tests run in a fake world (package fake): processes that can
// be killed, a filesystem in memory and a clock that moves only when told
// to. Nothing here touches the machine's files, processes or time, so the
// tests are fast and give the same result every run (docs/testing.md).

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/proclock/proclock"
	"github.com/proclock/proclock/examples/testing/app"
	"github.com/proclock/proclock/fake"
	"github.com/proclock/proclock/platform"
)

const lockPath = "/tmp/appd.lock"

// mechanisms are the two ways a lock is held: SQLite, as natively on
// linux, darwin, windows and the BSDs, and the stamped lock file of wasm
// guests, chosen by clearing Platform.SQLite.
var mechanisms = []struct {
	name     string
	platform func(*fake.Process) *platform.Platform
}{
	{"sqlite", (*fake.Process).Platform},
	{"file", fileMechanism},
}

func fileMechanism(p *fake.Process) *platform.Platform {
	return p.Platform().WithoutSQLite()
}

// startInstance runs the app in p, in the background, until stop is
// called; it returns once the instance holds the lock.
func startInstance(t *testing.T, p *platform.Platform) (stop func() error) {
	t.Helper()
	working, done := make(chan struct{}), make(chan struct{})
	result := make(chan error, 1)
	go func() {
		result <- app.Run(context.Background(), app.Config{Platform: p, LockPath: lockPath}, func(context.Context) error {
			close(working)
			<-done
			return nil
		})
	}()
	select {
	case <-working:
	case err := <-result:
		t.Fatalf("the first instance did not start: %v", err)
	}
	var once sync.Once
	return func() error {
		once.Do(func() { close(done) })
		return <-result
	}
}

// mustNotRun is work that fails the test if it runs.
func mustNotRun(t *testing.T) func(context.Context) error {
	return func(context.Context) error {
		t.Error("the work ran, though another instance holds the lock")
		return nil
	}
}

// Started twice, the second instance is refused and told who runs.
func TestSecondInstanceRefused(t *testing.T) {
	for _, m := range mechanisms {
		t.Run(m.name, func(t *testing.T) {
			w := fake.New()
			first, second := w.Spawn(), w.Spawn()
			stop := startInstance(t, m.platform(first))
			defer stop()

			err := app.Run(context.Background(), app.Config{Platform: m.platform(second), LockPath: lockPath}, mustNotRun(t))
			if !errors.Is(err, app.ErrAlreadyRunning) {
				t.Fatalf("second instance: %v; want ErrAlreadyRunning", err)
			}
			held, ok := errors.AsType[*proclock.HeldError](err)
			if !ok || held.Holder == nil || held.Holder.PID != first.PID() {
				t.Fatalf("second instance: %v; want the first's pid, %d, named", err, first.PID())
			}
		})
	}
}

// An instance killed as by SIGKILL releases nothing, and the next one
// starts anyway: the kernel drops a SQLite lock with its holder, and a
// lock file whose holder is gone is reclaimed.
func TestKilledInstanceReplaced(t *testing.T) {
	for _, m := range mechanisms {
		t.Run(m.name, func(t *testing.T) {
			w := fake.New()
			first, second := w.Spawn(), w.Spawn()
			stop := startInstance(t, m.platform(first))
			first.Kill()
			stop() // its work returns; its Release fails, as a dead process's calls do

			ran := false
			err := app.Run(context.Background(), app.Config{Platform: m.platform(second), LockPath: lockPath}, func(context.Context) error {
				ran = true
				return nil
			})
			if err != nil || !ran {
				t.Fatalf("after the first instance was killed: %v, ran %v; want the second to run", err, ran)
			}
		})
	}
}

// An instance stalled while it writes its lock file does not count as
// running yet: the file mechanism writes the file whole under a temporary
// name and then renames it into place, so nothing is at the path. A
// second instance runs; the first, once resumed, runs after it. A hook
// holds the first instance's write to its temporary file until the test
// lets it go.
func TestStalledInstanceNotYetRunning(t *testing.T) {
	w := fake.New()
	first, second := w.Spawn(), w.Spawn()
	stalled, resume := make(chan struct{}), make(chan struct{})
	var once sync.Once
	w.Before("write", "", func(ev fake.Event) error {
		if ev.PID == first.PID() && strings.HasPrefix(ev.Path, lockPath+".new-") {
			once.Do(func() {
				close(stalled)
				<-resume
			})
		}
		return nil
	})
	result := make(chan error, 1)
	go func() {
		result <- app.Run(context.Background(), app.Config{Platform: fileMechanism(first), LockPath: lockPath}, func(context.Context) error { return nil })
	}()
	<-stalled

	ran := false
	err := app.Run(context.Background(), app.Config{Platform: fileMechanism(second), LockPath: lockPath}, func(context.Context) error {
		ran = true
		return nil
	})
	if err != nil || !ran {
		t.Fatalf("beside a first instance stalled before its lock file appeared: %v, ran %v; want the second to run", err, ran)
	}
	close(resume)
	if err := <-result; err != nil {
		t.Fatalf("the first instance, once resumed: %v", err)
	}
}

// An instance killed while it writes its lock file leaves only its
// temporary file, never a file at the path: the next instance runs at
// once, without the clock moving (docs/protocol.md in the proclock
// repository, "Every record appears whole").
func TestInstanceCrashedWhileStarting(t *testing.T) {
	w := fake.New()
	first, second := w.Spawn(), w.Spawn()
	w.After("open", "", func(ev fake.Event) error {
		if ev.PID == first.PID() && ev.Flag&os.O_EXCL != 0 && strings.HasPrefix(ev.Path, lockPath+".new-") {
			first.Kill()
		}
		return nil
	})
	cfg := app.Config{Platform: fileMechanism(first), LockPath: lockPath}
	if err := app.Run(context.Background(), cfg, mustNotRun(t)); !errors.Is(err, fake.ErrKilled) {
		t.Fatalf("first instance: %v; want it killed", err)
	}

	cfg.Platform = fileMechanism(second)
	ran := false
	if err := app.Run(context.Background(), cfg, func(context.Context) error { ran = true; return nil }); err != nil || !ran {
		t.Fatalf("at once: %v, ran %v; want the second instance to run", err, ran)
	}
}

// With Wait, a second instance waits for the first to finish, then runs.
// The world's clock is frozen, so that the test knows when the waiter
// waits (WaitSleepers) and time moves only when the test says.
func TestWaitForRunningInstance(t *testing.T) {
	w := fake.New()
	thaw := w.Freeze()
	first, second := w.Spawn(), w.Spawn()
	stop := startInstance(t, first.Platform())
	ran := make(chan struct{})
	result := make(chan error, 1)
	go func() {
		cfg := app.Config{Platform: second.Platform(), LockPath: lockPath, Wait: true}
		result <- app.Run(context.Background(), cfg, func(context.Context) error {
			close(ran)
			return nil
		})
	}()
	if err := w.WaitSleepers(context.Background(), 1); err != nil {
		t.Fatal(err)
	}
	select {
	case <-ran:
		t.Fatal("the second instance ran while the first runs")
	default:
	}

	if err := stop(); err != nil {
		t.Fatal(err)
	}
	thaw() // the waiter's next pauses end at once
	if err := <-result; err != nil {
		t.Fatalf("the waiting instance: %v; want it to run", err)
	}
}

// A wait ends when its context does, with an error matching the
// context's.
func TestWaitCancelled(t *testing.T) {
	w := fake.New()
	w.Freeze()
	first, second := w.Spawn(), w.Spawn()
	stop := startInstance(t, first.Platform())
	defer stop()
	ctx, cancel := context.WithCancel(context.Background())
	result := make(chan error, 1)
	go func() {
		cfg := app.Config{Platform: second.Platform(), LockPath: lockPath, Wait: true}
		result <- app.Run(ctx, cfg, mustNotRun(t))
	}()
	if err := w.WaitSleepers(context.Background(), 1); err != nil {
		t.Fatal(err)
	}
	cancel()
	if err := <-result; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled wait: %v; want an error matching context.Canceled", err)
	}
}

// Running tells whether an instance runs, and writes nothing.
func TestRunning(t *testing.T) {
	for _, m := range mechanisms {
		t.Run(m.name, func(t *testing.T) {
			w := fake.New()
			first, probe := w.Spawn(), w.Spawn()
			running := func() bool {
				t.Helper()
				r, err := app.Running(context.Background(), m.platform(probe), lockPath)
				if err != nil {
					t.Fatal(err)
				}
				return r
			}
			if running() {
				t.Fatal("running before any instance started")
			}
			if _, err := w.FS().Lstat(lockPath); !errors.Is(err, fs.ErrNotExist) {
				t.Fatalf("Running created the lock's file: %v", err)
			}
			stop := startInstance(t, m.platform(first))
			if !running() {
				t.Fatal("not running while the first instance runs")
			}
			first.Kill()
			stop()
			if running() {
				t.Fatal("running after the only instance was killed")
			}
		})
	}
}

// Staging the world: what a lock meets besides other instances.

// A FIFO (or any file that is not a lock file) at the lock's path is left
// alone, and the app is told so.
func TestFIFOAtLockPath(t *testing.T) {
	w := fake.New()
	if err := w.Mknod(lockPath, fs.ModeNamedPipe|0o644); err != nil {
		t.Fatal(err)
	}
	err := app.Run(context.Background(), app.Config{Platform: w.Spawn().Platform(), LockPath: lockPath}, mustNotRun(t))
	if !errors.Is(err, proclock.ErrNotLockFile) || errors.Is(err, app.ErrAlreadyRunning) {
		t.Fatalf("FIFO at the path: %v; want ErrNotLockFile", err)
	}
	if fi, err := w.FS().Lstat(lockPath); err != nil || fi.Mode().Type() != fs.ModeNamedPipe {
		t.Fatalf("the FIFO after Run: %v, %v; want it kept", fi, err)
	}
}

// A lock file the app may not read is a permission error, never taken
// for a free lock nor for a running instance. Every fake process owns
// every file, so a mode of 0 stages EACCES for them all.
func TestLockFileUnreadable(t *testing.T) {
	w := fake.New()
	stop := startInstance(t, fileMechanism(w.Spawn()))
	defer stop()
	if err := w.Chmod(lockPath, 0); err != nil {
		t.Fatal(err)
	}
	err := app.Run(context.Background(), app.Config{Platform: fileMechanism(w.Spawn()), LockPath: lockPath}, mustNotRun(t))
	if !errors.Is(err, fs.ErrPermission) || errors.Is(err, app.ErrAlreadyRunning) {
		t.Fatalf("unreadable lock file: %v; want a permission error", err)
	}
}

// An instance on another host (two machines sharing a directory) or in
// another pid namespace (a container) cannot be judged from here: its lock
// file is never taken over, even a day after it died. A reboot of this
// host ends every instance of the boot before, containers' too: another
// boot is judged before another pid namespace (docs/design.md, "Judge
// order").
func TestOtherHostsNamespacesAndBoots(t *testing.T) {
	for _, tc := range []struct {
		name  string
		where func(*fake.World) *fake.World
		taken bool // whether the next instance here takes the lock
	}{
		{"other host", func(w *fake.World) *fake.World { return w.NewHost("otherhost") }, false},
		{"other pid namespace", (*fake.World).NewPIDNamespace, false},
		{"this host, before a reboot", func(w *fake.World) *fake.World { return w }, true},
		{"other pid namespace, before a reboot", (*fake.World).NewPIDNamespace, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := fake.New()
			there := tc.where(w).Spawn()
			stop := startInstance(t, fileMechanism(there))
			if tc.taken {
				w.Reboot() // kills every process of this host
			} else {
				there.Kill()
			}
			stop()
			w.Advance(24 * time.Hour)

			err := app.Run(context.Background(), app.Config{Platform: fileMechanism(w.Spawn()), LockPath: lockPath}, func(context.Context) error { return nil })
			switch {
			case tc.taken && err != nil:
				t.Fatalf("after a reboot: %v; want the lock", err)
			case !tc.taken && !errors.Is(err, app.ErrAlreadyRunning):
				t.Fatalf("a day after it died: %v; want ErrAlreadyRunning", err)
			}
		})
	}
}

// The lock's file removed while the instance works (a tmp cleaner, a
// user's rm): the work is stopped, told why, and Run says the lock was
// lost.
func TestLostLockStopsWork(t *testing.T) {
	for _, m := range mechanisms {
		t.Run(m.name, func(t *testing.T) {
			w := fake.New()
			working, cause := make(chan struct{}), make(chan error, 1)
			result := make(chan error, 1)
			go func() {
				result <- app.Run(context.Background(), app.Config{Platform: m.platform(w.Spawn()), LockPath: lockPath}, func(ctx context.Context) error {
					close(working)
					<-ctx.Done()
					cause <- context.Cause(ctx)
					return ctx.Err()
				})
			}()
			<-working

			if err := w.FS().Remove(lockPath); err != nil {
				t.Fatal(err)
			}
			if err := <-result; !errors.Is(err, proclock.ErrLost) || !errors.Is(err, proclock.ErrRemoved) {
				t.Fatalf("Run after the lock file was removed = %v; want ErrLost, ErrRemoved", err)
			}
			if err := <-cause; !errors.Is(err, proclock.ErrLost) {
				t.Fatalf("the work's context ended for %v; want the loss", err)
			}
		})
	}
}
