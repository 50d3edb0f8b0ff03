package fake_test

import (
	"os"
	"runtime"
	"testing"

	"github.com/proclock/proclock/fake"
	"github.com/proclock/proclock/fake/fakesql"
	"github.com/proclock/proclock/internal/locktest"
	"github.com/proclock/proclock/lockfs"
)

// rangeLocker is p's filesystem as the byte-range locker it is.
func rangeLocker(t *testing.T, p *fake.Process) lockfs.RangeLocker {
	t.Helper()
	rl, ok := p.FS().(lockfs.RangeLocker)
	if !ok {
		t.Fatalf("pid %d: the fake FS is no lockfs.RangeLocker", p.PID())
	}
	return rl
}

// tryRange makes one attempt at the write lock of path through p's
// filesystem, closing the file after, and reports whether it got it.
func tryRange(t *testing.T, p *fake.Process, path string) bool {
	t.Helper()
	rl := rangeLocker(t, p)
	f, err := rl.OpenLockable(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	got, err := rl.TryLockRange(f, 0, 1)
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// holdings are the ways a process holds SQLite's lock on a file through
// the fake world: a byte-range lock (what proclock takes), a file of the
// process's SQLite VFS, and a connection with the lock's transaction
// open. Each takes the lock, on a file it creates if missing, and returns
// keep, which refers to everything it opened; the caller drops that, or
// keeps it reachable.
var holdings = []struct {
	name string
	hold func(t *testing.T, p *fake.Process, path string) (keep any)
}{
	{"range lock", func(t *testing.T, p *fake.Process, path string) any {
		if f, err := p.FS().OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644); err != nil {
			t.Fatal(err)
		} else if err := f.Close(); err != nil {
			t.Fatal(err)
		}
		rl := rangeLocker(t, p)
		f, err := rl.OpenLockable(path)
		if err != nil {
			t.Fatal(err)
		}
		if got, err := rl.TryLockRange(f, 0, 1); err != nil || !got {
			t.Fatalf("the first range lock: %v, %v; want it taken", got, err)
		}
		return f
	}},
	{"connection", func(t *testing.T, p *fake.Process, path string) any {
		c, err := fakesql.Open(p, path, fileFlags)
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Exec(lockSQL); err != nil {
			t.Fatal(err)
		}
		return c
	}},
}

// A file that its process drops unclosed is closed when the collector
// finds it, as an *os.File is: its lock goes, another process takes it,
// and it is no longer counted open.
func TestDroppedFileIsClosedWhenCollected(t *testing.T) {
	for _, h := range holdings {
		t.Run(h.name, func(t *testing.T) {
			w := lockWorld(t)
			daemon, other := w.Spawn(), w.Spawn()
			h.hold(t, daemon, lockDB) // and drops it
			if tryRange(t, other, lockDB) {
				t.Fatal("another process took the lock just dropped, before any collection")
			}
			if !locktest.CollectUntil(50, func() bool { return daemon.OpenFiles() == 0 }) {
				t.Fatalf("after 50 collections the holder still has %d files open", daemon.OpenFiles())
			}
			if n := w.OpenFiles(); n != 0 {
				t.Errorf("%d files open in the world once the holder's were collected", n)
			}
			if !tryRange(t, other, lockDB) {
				t.Error("another process could not take the lock of a collected file")
			}
		})
	}
}

// A file still reachable is never closed by the collector, however often
// it runs: its lock stays and it stays counted, until Close.
func TestReachableFileIsNotCollected(t *testing.T) {
	for _, h := range holdings {
		t.Run(h.name, func(t *testing.T) {
			w := lockWorld(t)
			daemon, other := w.Spawn(), w.Spawn()
			keep := h.hold(t, daemon, lockDB)
			open := daemon.OpenFiles()
			if open == 0 {
				t.Fatal("the holder has no file open")
			}
			rounds := 0
			locktest.CollectUntil(50, func() bool { rounds++; return rounds > 20 })
			if n := daemon.OpenFiles(); n != open {
				t.Errorf("after 20 collections the holder has %d files open; want %d", n, open)
			}
			if tryRange(t, other, lockDB) {
				t.Error("another process took the lock of a file still reachable")
			}
			runtime.KeepAlive(keep)
			if err := keep.(interface{ Close() error }).Close(); err != nil {
				t.Fatal(err)
			}
			if !tryRange(t, other, lockDB) || daemon.OpenFiles() != 0 {
				t.Errorf("after Close: lock not taken, or %d files open", daemon.OpenFiles())
			}
		})
	}
}

// A collected file is closed as Close closes it: the last handle on a
// file with no name gone, its inode number goes to the next file made.
func TestCollectedFileFreesItsInodeNumber(t *testing.T) {
	w := fake.New()
	fsys := w.Spawn().FS()
	mustWrite(t, fsys, "/tmp/a", "a")
	a := mustID(t, fsys, "/tmp/a")
	func() {
		if _, err := fsys.OpenFile("/tmp/a", os.O_RDONLY, 0); err != nil {
			t.Fatal(err)
		}
	}()
	if err := fsys.Remove("/tmp/a"); err != nil {
		t.Fatal(err)
	}
	if !locktest.CollectUntil(50, func() bool { return w.OpenFiles() == 0 }) {
		t.Fatalf("after 50 collections %d files are still open", w.OpenFiles())
	}
	mustWrite(t, fsys, "/tmp/b", "b")
	if b := mustID(t, fsys, "/tmp/b"); b.Ino != a.Ino {
		t.Errorf("a file made once the removed file's handle was collected has number %d; want %d, the gone one's", b.Ino, a.Ino)
	}
}
