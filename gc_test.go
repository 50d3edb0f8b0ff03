package proclock_test

import (
	"context"
	"errors"
	"runtime"
	"testing"

	"github.com/proclock/proclock"
	"github.com/proclock/proclock/fake"
)

// TestDroppedLockStaysHeldFake: in the fake world too, a process's lock
// does not go away with its garbage: another process still finds it held,
// with either mechanism.
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
		}()
		for range 5 {
			_ = make([]byte, 1<<20)
			runtime.GC()
		}
		_, err := proclock.Acquire(context.Background(), other.Platform(), "/locks/daemon.lock", proclock.Options{})
		if he, ok := errors.AsType[*proclock.HeldError](err); !ok || he.Holder == nil || he.Holder.PID != daemon.PID() {
			t.Fatalf("file mechanism %v: Acquire after the holder's collections = %v; want held by pid %d", file, err, daemon.PID())
		}
	}
}
