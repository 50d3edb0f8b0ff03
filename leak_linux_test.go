package proclock_test

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/ncruces/go-sqlite3"

	"github.com/proclock/proclock"
	"github.com/proclock/proclock/internal/lockrec"
	"github.com/proclock/proclock/internal/locktest/sqlpath"
	"github.com/proclock/proclock/platform"
)

// Natively, 1000 acquire/release cycles and 100 cancelled waits leave this
// process's goroutines, file descriptors and SQLite connections as they
// were (the pool's idle connections, filled up before, are a fixed
// allowance); with the wake-up source in the waits (inotify, pidfd,
// eventfd) and without it.
func TestLeaksNative(t *testing.T) {
	for _, mech := range []proclock.Mechanism{proclock.MechanismSQLite, leakSQL, proclock.MechanismFile} {
		for _, wake := range []bool{false, true} {
			name := string(mech)
			if wake {
				name += "/wake"
			}
			t.Run(name, func(t *testing.T) {
				// Registered first, so run last: once the holder has let
				// go, a parked wait of this test is granted and closes its
				// file; the next test counts from after that.
				start := openFDs(t)
				t.Cleanup(func() { untilFDs(t, start) })
				dir := t.TempDir()
				n := platform.Native()
				// A platform value of its own: its own turns and pool,
				// so that only this test's connections are counted.
				p := &platform.Platform{FS: n.FS, SQLite: n.SQLite, Process: n.Process, Clock: n.Clock}
				if wake {
					if p.Wake = n.Wake; p.Wake == nil {
						t.Fatal("no native wake-up source on linux")
					}
				}
				switch mech {
				case proclock.MechanismFile:
					p = p.WithoutSQLite()
				case leakSQL:
					p.SQLite = sqlpath.Native()
				}
				w := &leakWorld{
					free:  filepath.Join(dir, "free.lock"),
					held:  filepath.Join(dir, "held.lock"),
					files: openFDs,
					sql:   mech == leakSQL,
				}
				w.setPlatform(p)
				if mech == proclock.MechanismSQLite {
					w.queued = func() bool { return kernelWaits(t, w.held) > 0 }
				}
				held := mech
				if held == leakSQL {
					held = proclock.MechanismSQLite // held by a connection either way
				}
				leakHoldElsewhere(t, held, w.held)
				checkNoLeaks(t, w)
			})
		}
	}
}

// openFDs counts this process's open file descriptors.
func openFDs(t *testing.T) int {
	t.Helper()
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	return len(fds)
}

// untilFDs yields until at most n descriptors are open, or 10 s have
// passed; it judges nothing (the leak check has).
func untilFDs(t *testing.T, n int) {
	for end := time.Now().Add(10 * time.Second); openFDs(t) > n && time.Now().Before(end); {
		runtime.Gosched()
	}
}

// leakHoldElsewhere makes path held by someone other than proclock in this
// process: a plain SQLite connection holding it as a proclock holder would,
// or a lock file stamped by this process's parent (the go command), which
// lives as long as the test.
func leakHoldElsewhere(t *testing.T, mech proclock.Mechanism, path string) {
	t.Helper()
	switch mech {
	case proclock.MechanismSQLite:
		conn, err := sqlite3.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { conn.Close() })
		if err := conn.Exec(`PRAGMA locking_mode=EXCLUSIVE; PRAGMA journal_mode=OFF; BEGIN EXCLUSIVE;`); err != nil {
			t.Fatal(err)
		}
	case proclock.MechanismFile:
		proc := platform.Native().Process
		self, err := proc.Self()
		if err != nil {
			t.Fatal(err)
		}
		parent := self
		parent.PID = os.Getppid()
		info, err := proc.Lookup(parent.PID)
		if err != nil || !info.Exists {
			t.Fatalf("parent %d: %+v, %v", parent.PID, info, err)
		}
		parent.StartTime = info.StartTime
		stamp := lockrec.Record{Format: lockrec.Format, Identity: parent, AcquiredAt: time.Now(), Nonce: "leak-check-holder"}
		if err := os.WriteFile(path, stamp.Marshal(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
