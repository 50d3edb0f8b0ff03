package proclock_test

import (
	"context"
	"errors"
	"io/fs"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/proclock/proclock"
	"github.com/proclock/proclock/fake"
	"github.com/proclock/proclock/internal/stamplock"
	"github.com/proclock/proclock/platform"
)

const appLock = "/tmp/app.lock"

// fileMech returns p's platform with the file mechanism.
func fileMech(p *fake.Process) *platform.Platform {
	return p.Platform().WithoutSQLite()
}

// failOnce makes the first op on appLock by p after armed() fail with EIO.
func failOnce(w *fake.World, p *fake.Process, op string, armed func() bool) {
	var done atomic.Bool
	w.Before(op, appLock, func(ev fake.Event) error {
		if ev.PID == p.PID() && armed() && done.CompareAndSwap(false, true) {
			return syscall.EIO
		}
		return nil
	})
}

// One failed reading right after stamping must not leave a stamp of this
// live process behind: that would hold the lock for as long as it lives.
func TestTransientErrorAfterStampLeavesNoStamp(t *testing.T) {
	ctx := context.Background()
	w := fake.New()
	a, b := w.Spawn(), w.Spawn()
	var wrote atomic.Bool
	w.After("write", appLock, func(ev fake.Event) error {
		if ev.PID == a.PID() {
			wrote.Store(true)
		}
		return nil
	})
	failOnce(w, a, "stat", wrote.Load)
	l, err := proclock.Acquire(ctx, fileMech(a), appLock, proclock.Options{})
	if err == nil {
		// The stamp's bytes confirmed it: fine, as long as it releases.
		if err := l.Release(); err != nil {
			t.Fatal(err)
		}
	}
	l, err = proclock.Acquire(ctx, fileMech(b), appLock, proclock.Options{})
	if err != nil {
		t.Fatalf("another process after a failed stamp check: %v; want the lock", err)
	}
	l.Release()
}

// A Release that fails can be called again, and then lets go: a lock is
// never wedged by its own released holder.
func TestReleaseRetriesAfterFailure(t *testing.T) {
	ctx := context.Background()
	w := fake.New()
	a, b := w.Spawn(), w.Spawn()
	l, err := proclock.Acquire(ctx, fileMech(a), appLock, proclock.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var releasing atomic.Bool
	failOnce(w, a, "stat", releasing.Load)
	failOnce(w, a, "open", releasing.Load)
	releasing.Store(true)
	if err := l.Release(); err == nil || errors.Is(err, stamplock.ErrLost) {
		t.Fatalf("Release with its file unreadable = %v; want an error, and not ErrLost", err)
	}
	if err := l.Release(); err != nil {
		t.Fatalf("second Release: %v", err)
	}
	if err := l.Release(); err != nil {
		t.Fatalf("third Release: %v", err)
	}
	l, err = proclock.Acquire(ctx, fileMech(b), appLock, proclock.Options{})
	if err != nil {
		t.Fatalf("Acquire after the retried release: %v", err)
	}
	l.Release()
}

// pidless is a Process whose identity has no pid, as an injected platform
// might give.
type pidless struct{ platform.Process }

func (p pidless) Self() (platform.Identity, error) {
	id, err := p.Process.Self()
	id.PID = 0
	return id, err
}

// An identity without a pid cannot be stamped (others could not judge it,
// and would take the stamp for junk after 30 s): the file mechanism
// refuses it and creates nothing; SQLite locks with its holder unknown.
func TestIdentityWithoutPID(t *testing.T) {
	ctx := context.Background()
	w := fake.New()
	a := w.Spawn()
	p := fileMech(a)
	p.Process = pidless{p.Process}
	if _, err := proclock.Acquire(ctx, p, appLock, proclock.Options{}); err == nil {
		t.Fatal("file mechanism: Acquire with a pid-less identity succeeded")
	}
	if _, err := w.FS().Lstat(appLock); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("refused Acquire left %s: %v", appLock, err)
	}
	q := a.Platform()
	q.Process = pidless{q.Process}
	l, err := proclock.Acquire(ctx, q, appLock, proclock.Options{})
	if err != nil {
		t.Fatalf("sqlite: %v", err)
	}
	defer l.Release()
	if l.Holder() != nil {
		t.Fatalf("sqlite: holder %+v; want unknown", *l.Holder())
	}
}

// A lock file this process may not read makes IsHeld fail as Acquire
// does, instead of calling the lock free.
func TestIsHeldOnUnreadableLockFails(t *testing.T) {
	ctx := context.Background()
	w := fake.New()
	a, b := w.Spawn(), w.Spawn()
	l, err := proclock.Acquire(ctx, fileMech(a), appLock, proclock.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release()
	if err := w.Chmod(appLock, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := proclock.Acquire(ctx, fileMech(b), appLock, proclock.Options{}); !errors.Is(err, fs.ErrPermission) {
		t.Fatalf("Acquire = %v; want a permission error", err)
	}
	held, err := proclock.IsHeld(ctx, fileMech(b), appLock)
	if !errors.Is(err, fs.ErrPermission) {
		t.Fatalf("IsHeld = %v, %v; want a permission error", held, err)
	}
	st, err := proclock.Inspect(ctx, fileMech(b), appLock)
	if err != nil || st.State != proclock.StateInaccessible {
		t.Fatalf("Inspect = %+v, %v; want inaccessible", st, err)
	}
}
