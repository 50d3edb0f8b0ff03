package proclock_test

import (
	"context"
	"errors"
	"os"
	"testing"

	"github.com/proclock/proclock"
	"github.com/proclock/proclock/fake"
	"github.com/proclock/proclock/internal/locktest"
)

// TestDroppedLockStaysHeldFake: in the fake world too, a process's lock
// does not go away with its garbage: another process still finds it held,
// with either mechanism. The fake world closes a file that its process no
// longer reaches when the collector finds it, as the OS does an *os.File
// (docs/testing.md), so this fails when a held lock is unreachable. The
// daemon drops a file of its own beside the lock: once the collector has
// closed that one, it has found whatever else of the daemon's was garbage.
func TestDroppedLockStaysHeldFake(t *testing.T) {
	for _, file := range []bool{false, true} {
		w := fake.New()
		if err := w.Mkdir("/locks", 0o755); err != nil {
			t.Fatal(err)
		}
		daemon, other := w.Spawn(), w.Spawn()
		p := daemon.Platform()
		if file {
			p = p.WithoutSQLite()
		}
		func() {
			if _, err := proclock.Acquire(context.Background(), p, "/locks/daemon.lock", proclock.Options{}); err != nil {
				t.Fatal(err)
			}
			if _, err := p.FS.OpenFile("/locks/dropped", os.O_RDWR|os.O_CREATE, 0o644); err != nil {
				t.Fatal(err)
			}
		}()
		open := w.OpenFiles()
		if !locktest.CollectUntil(50, func() bool { return w.OpenFiles() < open }) {
			t.Fatalf("file mechanism %v: 50 collections did not close the file the daemon dropped", file)
		}
		// The lock's garbage, if any, was found in the same collection;
		// these let its cleanups run.
		locktest.CollectUntil(10, func() bool { return false })
		_, err := proclock.Acquire(context.Background(), other.Platform(), "/locks/daemon.lock", proclock.Options{})
		if he, ok := errors.AsType[*proclock.HeldError](err); !ok || he.Holder == nil || he.Holder.PID != daemon.PID() {
			t.Fatalf("file mechanism %v: Acquire after the holder's collections = %v; want held by pid %d", file, err, daemon.PID())
		}
	}
}
