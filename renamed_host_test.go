package proclock_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/proclock/proclock"
	"github.com/proclock/proclock/fake"
	"github.com/proclock/proclock/platform"
)

// renamedProcess answers Self with another host name: the same machine,
// boot, pid namespace and pids, renamed since its locks were taken
// (docs/installation.md, "A renamed host").
type renamedProcess struct {
	platform.Process
	host string
}

func (r renamedProcess) Self() (platform.Identity, error) {
	id, err := r.Process.Self()
	id.Host = r.host
	return id, err
}

// renamed is p's platform after its host was renamed to "newname".
func renamed(p *platform.Platform) *platform.Platform {
	p.Process = renamedProcess{p.Process, "newname"}
	return p
}

// TestRenamedHost: a holder that died before its host was renamed reads,
// after the rename, as a holder on another host.
//   - A lock file (file mechanism) stamped with the old name is never
//     reclaimed, whatever its age and even after a reboot, since another
//     host is judged first (docs/design.md, "Judge order"); removing it by
//     hand frees the lock.
//   - A SQLite lock is the kernel's: it went with its holder, and the
//     holder's mark, naming the very file the next SQLite holder locks, is
//     a leftover that holder replaces.
//   - A file-mechanism process meets that mark first: held, until a SQLite
//     process takes the lock and clears it.
func TestRenamedHost(t *testing.T) {
	ctx := context.Background()
	t.Run("file", func(t *testing.T) {
		w := fake.New()
		old := w.Spawn()
		if _, err := proclock.Acquire(ctx, fileMech(old), appLock, proclock.Options{}); err != nil {
			t.Fatal(err)
		}
		old.Kill()
		w.Advance(24 * time.Hour)
		w.Reboot()
		p := renamed(fileMech(w.Spawn()))
		_, err := proclock.Acquire(ctx, p, appLock, proclock.Options{})
		held, ok := errors.AsType[*proclock.HeldError](err)
		if !ok || held.Holder == nil || held.Holder.Host != old.Identity().Host || held.Holder.PID != old.PID() {
			t.Fatalf("after the rename: %v; want held by pid %d on %s, the old name", err, old.PID(), old.Identity().Host)
		}
		st, err := proclock.Inspect(ctx, p, appLock)
		if err != nil || st.State != proclock.StateHeld {
			t.Fatalf("Inspect after the rename = %+v, %v; want held", st, err)
		}
		if err := w.FS().Remove(appLock); err != nil {
			t.Fatal(err)
		}
		l, err := proclock.Acquire(ctx, p, appLock, proclock.Options{})
		if err != nil {
			t.Fatalf("with the old lock file removed by hand: %v", err)
		}
		l.Release()
	})
	t.Run("sqlite", func(t *testing.T) {
		w := fake.New()
		old := w.Spawn()
		if _, err := proclock.Acquire(ctx, old.Platform(), appLock, proclock.Options{}); err != nil {
			t.Fatal(err)
		}
		old.Kill()
		f := renamed(fileMech(w.Spawn()))
		_, err := proclock.Acquire(ctx, f, appLock, proclock.Options{})
		if held, ok := errors.AsType[*proclock.HeldError](err); !ok || held.Holder == nil || held.Holder.Host != old.Identity().Host {
			t.Fatalf("file mechanism, after the rename: %v; want held by the old name's mark", err)
		}
		s := renamed(w.Spawn().Platform())
		l, err := proclock.Acquire(ctx, s, appLock, proclock.Options{})
		if err != nil {
			t.Fatalf("SQLite, after the rename: %v; want the lock at once", err)
		}
		if err := l.Release(); err != nil {
			t.Fatal(err)
		}
		l, err = proclock.Acquire(ctx, f, appLock, proclock.Options{})
		if err != nil {
			t.Fatalf("file mechanism, once a SQLite holder has come and gone: %v", err)
		}
		l.Release()
	})
}
