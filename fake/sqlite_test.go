package fake_test

import (
	"errors"
	"io/fs"
	"os"
	"sync"
	"syscall"
	"testing"

	"github.com/ncruces/go-sqlite3"

	"github.com/proclock/proclock/fake"
	"github.com/proclock/proclock/fake/fakesql"
	"github.com/proclock/proclock/internal/fsx"
)

// The lock proclock takes, on a connection to the file itself or on an
// in-memory connection that attached the file as "lock".
const (
	lockSQL         = `PRAGMA locking_mode=EXCLUSIVE; PRAGMA journal_mode=OFF; BEGIN EXCLUSIVE;`
	attachedLockSQL = `PRAGMA lock.locking_mode=EXCLUSIVE; PRAGMA lock.journal_mode=OFF; BEGIN EXCLUSIVE;`

	memFlags  = sqlite3.OPEN_READWRITE | sqlite3.OPEN_CREATE | sqlite3.OPEN_URI
	fileFlags = sqlite3.OPEN_READWRITE | sqlite3.OPEN_CREATE
)

const lockDB = "/locks/a.db"

// lockWorld is a world with a /locks directory.
func lockWorld(t *testing.T) *fake.World {
	t.Helper()
	w := fake.New()
	if err := w.Mkdir("/locks", 0o755); err != nil {
		t.Fatal(err)
	}
	return w
}

// connect opens a connection through p's platform, closed when the test
// ends.
func connect(t *testing.T, p *fake.Process, path string, flags sqlite3.OpenFlag) *sqlite3.Conn {
	t.Helper()
	c, err := fakesql.Open(p, path, flags)
	if err != nil {
		t.Fatalf("pid %d: open %q: %v", p.PID(), path, err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// locker is one connection trying to take the lock at a path, in one of
// the two ways proclock can: again and again, as a waiter does.
type locker struct {
	conn     *sqlite3.Conn
	path     string
	attach   bool
	attached bool
}

// form names a way to take the lock.
type form struct {
	name   string
	attach bool
}

var forms = []form{{"file", false}, {"attach", true}}

func newLocker(t *testing.T, p *fake.Process, path string, f form) *locker {
	t.Helper()
	if f.attach {
		return &locker{conn: connect(t, p, ":memory:", memFlags), path: path, attach: true}
	}
	return &locker{conn: connect(t, p, path, fileFlags), path: path}
}

// try makes one attempt to take the lock.
func (l *locker) try() error {
	if !l.attach {
		return l.conn.Exec(lockSQL)
	}
	if !l.attached {
		if err := l.conn.Exec(`ATTACH DATABASE 'file://` + l.path + `' AS lock`); err != nil {
			return err
		}
		l.attached = true
	}
	return l.conn.Exec(attachedLockSQL)
}

// probeOpen is the other probe: a read-only connection to the file that
// reads its schema version.
func probeOpen(t *testing.T, p *fake.Process, path string) error {
	t.Helper()
	c, err := fakesql.Open(p, path, sqlite3.OPEN_READONLY)
	if err != nil {
		return err
	}
	defer c.Close()
	return c.Exec(`PRAGMA schema_version`)
}

func wantBusy(t *testing.T, what string, err error) {
	t.Helper()
	if !errors.Is(err, sqlite3.BUSY) {
		t.Errorf("%s: %v; want SQLITE_BUSY", what, err)
	}
}

// wantEmptyAndNoJournal checks the held lock wrote nothing: a 0-byte
// database and no journal beside it.
func wantEmptyAndNoJournal(t *testing.T, w *fake.World, path string) {
	t.Helper()
	info, err := w.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if info.Size() != 0 {
		t.Errorf("%s is %d bytes; want 0", path, info.Size())
	}
	for _, suffix := range []string{"-journal", "-wal", "-shm"} {
		if _, err := w.Stat(path + suffix); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s%s: %v; want it missing", path, suffix, err)
		}
	}
}

// A holds the lock: B's attempts and probes are busy, at once. A dies:
// B's next attempt takes the lock, with no waiting and nothing reclaimed.
func TestSQLiteLockIsDroppedWhenItsHolderIsKilled(t *testing.T) {
	for _, f := range forms {
		t.Run(f.name, func(t *testing.T) {
			w := lockWorld(t)
			a, b, c := w.Spawn(), w.Spawn(), w.Spawn()
			if err := newLocker(t, a, lockDB, f).try(); err != nil {
				t.Fatalf("A's attempt on a free lock: %v", err)
			}
			bl := newLocker(t, b, lockDB, f)
			wantBusy(t, "B's attempt", bl.try())
			wantBusy(t, "B's attach probe", probeAttach(b, lockDB))
			wantBusy(t, "B's read-only open probe", probeOpen(t, b, lockDB))
			wantEmptyAndNoJournal(t, w, lockDB)

			a.Kill()
			if err := bl.try(); err != nil {
				t.Fatalf("B's attempt after A died: %v", err)
			}
			wantBusy(t, "C's probe of B's lock", probeAttach(c, lockDB))
			wantEmptyAndNoJournal(t, w, lockDB)
		})
	}
}

// Locks belong to open files, not processes: a second connection of the
// holder's own process is refused too, until the first one closes.
func TestSQLiteConnectionsOfOneProcessConflict(t *testing.T) {
	for _, f := range forms {
		t.Run(f.name, func(t *testing.T) {
			w := lockWorld(t)
			a := w.Spawn()
			first, second := newLocker(t, a, lockDB, f), newLocker(t, a, lockDB, f)
			if err := first.try(); err != nil {
				t.Fatal(err)
			}
			wantBusy(t, "the second connection's attempt", second.try())
			wantBusy(t, "the holder's own probe", probeAttach(a, lockDB))
			if err := first.conn.Close(); err != nil {
				t.Fatal(err)
			}
			if err := second.try(); err != nil {
				t.Errorf("attempt after the holder's connection closed: %v", err)
			}
		})
	}
}

// A read-only open of a missing file fails with CANTOPEN, tells why, and
// creates nothing; a directory is CANTOPEN_ISDIR, read-only or not.
func TestSQLiteCannotOpen(t *testing.T) {
	w := lockWorld(t)
	p := w.Spawn()
	_, err := fakesql.Open(p, lockDB, sqlite3.OPEN_READONLY)
	if !errors.Is(err, sqlite3.CANTOPEN) || !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("read-only open of a missing file: %v; want CANTOPEN and fs.ErrNotExist", err)
	}
	err = probeAttach(p, lockDB)
	if !errors.Is(err, sqlite3.CANTOPEN) {
		t.Errorf("read-only attach of a missing file: %v; want CANTOPEN", err)
	}
	if _, err := w.Stat(lockDB); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("after read-only opens, %s: %v; want it missing", lockDB, err)
	}
	for _, flags := range []sqlite3.OpenFlag{sqlite3.OPEN_READONLY, fileFlags} {
		_, err := fakesql.Open(p, "/locks", flags)
		if !errors.Is(err, sqlite3.CANTOPEN_ISDIR) {
			t.Errorf("open of a directory with flags %#x: %v; want CANTOPEN_ISDIR", flags, err)
		}
	}
	if n := w.OpenFiles(); n != 0 {
		t.Errorf("failed opens left %d files open", n)
	}
}

// A path is a path, not a URI: '?', '#', '%' and spaces are part of the
// file's name.
func TestSQLitePathIsNotAURI(t *testing.T) {
	w := lockWorld(t)
	const odd = "/locks/a?b#c%41 d.db"
	if err := connect(t, w.Spawn(), odd, fileFlags).Exec(`CREATE TABLE t(x)`); err != nil {
		t.Fatal(err)
	}
	if fi, err := w.Stat(odd); err != nil || fi.Size() == 0 {
		t.Errorf("%s: %v, %v; want the database", odd, fi, err)
	}
}

// Readers of a free database share it: several read transactions at once
// all succeed (and together keep a writer out), and so do probes made
// while they read.
func TestSQLiteConcurrentReadersOfAFreeDatabase(t *testing.T) {
	w := lockWorld(t)
	f, err := w.FS().OpenFile(lockDB, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o666)
	if err != nil {
		t.Fatal(err)
	}
	f.Close()

	const readers = 8
	var holding sync.WaitGroup
	holding.Add(readers)
	release := make(chan struct{})
	errs := make(chan error, 2*readers)
	var done sync.WaitGroup
	for range readers {
		p := w.Spawn()
		c := connect(t, p, lockDB, sqlite3.OPEN_READONLY)
		done.Add(1)
		go func() {
			defer done.Done()
			err := c.Exec(`BEGIN; SELECT count(*) FROM sqlite_master;`)
			errs <- err
			errs <- probeAttach(p, lockDB)
			holding.Done()
			<-release
			if err == nil {
				c.Exec(`COMMIT`)
			}
		}()
	}
	holding.Wait()
	writer := newLocker(t, w.Spawn(), lockDB, forms[0])
	wantBusy(t, "a writer's attempt while readers read", writer.try())
	// In exclusive locking mode the refused writer keeps PENDING (so no
	// new reader comes in) until its connection lets go.
	wantBusy(t, "a probe while the refused writer waits", probeAttach(w.Spawn(), lockDB))
	writer.conn.Close()
	close(release)
	done.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Errorf("a reader or probe of a free database: %v", err)
		}
	}
	if err := newLocker(t, w.Spawn(), lockDB, forms[1]).try(); err != nil {
		t.Errorf("a writer's attempt after the readers finished: %v", err)
	}
}

// probeAttach is proclock's probe: a read-only ATTACH from an in-memory
// connection, which reads the schema and so needs a shared lock.
func probeAttach(p *fake.Process, path string) error {
	c, err := fakesql.Open(p, ":memory:", memFlags)
	if err != nil {
		return err
	}
	defer c.Close()
	if err := c.Exec(`ATTACH DATABASE 'file://` + path + `?mode=ro' AS lock`); err != nil {
		return err
	}
	return c.Exec(`DETACH lock`)
}

// SQLite's file operations are the acting process's: hooks see them with
// its pid, for the files it attaches too, and a Before hook refuses them.
// Data written by one process (through a journal that comes and goes) is
// read by another.
func TestSQLiteOperationsRunHooksAsTheActingProcess(t *testing.T) {
	w := lockWorld(t)
	a, b := w.Spawn(), w.Spawn()
	var mu sync.Mutex
	seen := map[string]map[int]bool{}
	record := func(ev fake.Event) error {
		mu.Lock()
		defer mu.Unlock()
		if seen[ev.Op] == nil {
			seen[ev.Op] = map[int]bool{}
		}
		seen[ev.Op][ev.PID] = true
		return nil
	}
	w.After("", lockDB, record)
	journal := 0
	w.After("open", lockDB+"-journal", func(ev fake.Event) error {
		if ev.PID == a.PID() && ev.Err == nil {
			journal++
		}
		return nil
	})

	ca := connect(t, a, lockDB, fileFlags)
	if err := ca.Exec(`CREATE TABLE t(x); INSERT INTO t VALUES ('from a');`); err != nil {
		t.Fatal(err)
	}
	if journal == 0 {
		t.Error("A wrote without opening a rollback journal")
	}
	if _, err := w.Stat(lockDB + "-journal"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("journal after the commit: %v; want it deleted", err)
	}

	cb := connect(t, b, ":memory:", memFlags)
	if err := cb.Exec(`ATTACH DATABASE 'file://` + lockDB + `' AS db`); err != nil {
		t.Fatal(err)
	}
	stmt, _, err := cb.Prepare(`SELECT x FROM db.t`)
	if err != nil {
		t.Fatal(err)
	}
	if !stmt.Step() || stmt.ColumnText(0) != "from a" {
		t.Errorf("B read %q (%v); want %q", stmt.ColumnText(0), stmt.Err(), "from a")
	}
	stmt.Close()

	mu.Lock()
	for _, op := range []string{"open", "read", "stat"} {
		if !seen[op][a.PID()] || !seen[op][b.PID()] {
			t.Errorf("%s on %s seen for pids %v; want A's %d and B's %d", op, lockDB, seen[op], a.PID(), b.PID())
		}
	}
	if !seen["write"][a.PID()] || seen["write"][b.PID()] {
		t.Errorf("writes seen for pids %v; want A's %d only", seen["write"], a.PID())
	}
	mu.Unlock()

	w.Before("open", lockDB, func(ev fake.Event) error {
		if ev.PID == b.PID() {
			return syscall.EACCES
		}
		return nil
	})
	_, err = fakesql.Open(b, lockDB, fileFlags)
	if !errors.Is(err, sqlite3.CANTOPEN) || !errors.Is(err, fs.ErrPermission) {
		t.Errorf("open refused by a hook: %v; want CANTOPEN and fs.ErrPermission", err)
	}
	if err := probeAttach(a, lockDB); err != nil {
		t.Errorf("another process's probe, which the hook lets through: %v", err)
	}
}

// Kill closes the files SQLite opened for the process, and whatever the
// process's connections do next fails with ErrKilled, without a panic.
func TestKillClosesSQLiteFiles(t *testing.T) {
	w := lockWorld(t)
	a, b := w.Spawn(), w.Spawn()
	before := w.OpenFiles()
	holder := newLocker(t, a, lockDB, forms[1])
	if err := holder.try(); err != nil {
		t.Fatal(err)
	}
	idle := connect(t, a, ":memory:", memFlags)
	plain := connect(t, a, lockDB, fileFlags)
	if n := w.OpenFiles(); n != before+2 || a.OpenFiles() != 2 {
		t.Errorf("open files while A holds the lock: world %d, A %d; want %d and 2", n, a.OpenFiles(), before+2)
	}

	a.Kill()
	if n := w.OpenFiles(); n != before {
		t.Errorf("open files after Kill: %d; want %d", n, before)
	}
	if err := holder.conn.Exec(`CREATE TABLE lock.t(x); COMMIT;`); !errors.Is(err, fake.ErrKilled) || !errors.Is(err, sqlite3.IOERR) {
		t.Errorf("the dead holder's write: %v; want an I/O error matching ErrKilled", err)
	}
	if err := idle.Exec(`ATTACH DATABASE 'file:///locks/b.db' AS b`); !errors.Is(err, fake.ErrKilled) {
		t.Errorf("the dead process's attach: %v; want ErrKilled", err)
	}
	if err := plain.Exec(`PRAGMA schema_version`); !errors.Is(err, fake.ErrKilled) || !errors.Is(err, sqlite3.IOERR) {
		t.Errorf("the dead process's read: %v; want an I/O error matching ErrKilled", err)
	}
	if _, err := fakesql.Open(a, ":memory:", memFlags); !errors.Is(err, fake.ErrKilled) {
		t.Errorf("the dead process's Open: %v; want ErrKilled", err)
	}
	for _, c := range []*sqlite3.Conn{holder.conn, idle, plain} {
		c.Close() // closing a dead process's connection is harmless
	}
	if _, err := w.Stat("/locks/b.db"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the dead process's attach created /locks/b.db: %v", err)
	}
	if err := newLocker(t, b, lockDB, forms[0]).try(); err != nil {
		t.Errorf("B's attempt after A died: %v", err)
	}
}

// Locks are per inode. A connection opened before the file at the path was
// swapped for a new inode locks the old one; one opened after locks the
// new one; neither blocks the other, and each blocks its own inode's
// later comers.
func TestSQLiteLocksFollowTheInode(t *testing.T) {
	w := lockWorld(t)
	a, b, c := w.Spawn(), w.Spawn(), w.Spawn()
	f, err := w.FS().OpenFile(lockDB, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o666)
	if err != nil {
		t.Fatal(err)
	}
	f.Close()

	early := newLocker(t, a, lockDB, forms[0]) // opens the old inode now
	if err := w.SwapInode(lockDB); err != nil {
		t.Fatal(err)
	}
	late := newLocker(t, b, lockDB, forms[1])
	if err := late.try(); err != nil {
		t.Fatalf("attempt on the new inode: %v", err)
	}
	if err := early.try(); err != nil {
		t.Errorf("attempt on the old inode, while the new one is held: %v", err)
	}
	wantBusy(t, "C's attempt on the new inode", newLocker(t, c, lockDB, forms[1]).try())

	a.Kill() // the old inode's holder: the new inode stays held
	wantBusy(t, "C's probe after the old inode's holder died", probeAttach(c, lockDB))
	b.Kill()
	if err := probeAttach(c, lockDB); err != nil {
		t.Errorf("C's probe after both holders died: %v", err)
	}
}

// A process killed as SQLite opens its file (after the open, before
// SQLite has the handle) fails the open, and leaves no file open and no
// lock behind.
func TestKillDuringSQLiteOpen(t *testing.T) {
	w := lockWorld(t)
	a, b := w.Spawn(), w.Spawn()
	w.After("open", lockDB, func(ev fake.Event) error {
		if ev.PID == a.PID() {
			a.Kill()
		}
		return nil
	})
	if err := newLocker(t, a, lockDB, forms[1]).try(); !errors.Is(err, fake.ErrKilled) || !errors.Is(err, sqlite3.CANTOPEN) {
		t.Errorf("attach by a process killed in the open: %v; want CANTOPEN matching ErrKilled", err)
	}
	if n := w.OpenFiles(); n != 0 {
		t.Errorf("%d files open after the killed open", n)
	}
	if err := newLocker(t, b, lockDB, forms[0]).try(); err != nil {
		t.Errorf("B's attempt after A died opening: %v", err)
	}
}

// SQLite's calls at the lock table are operations hooks see (OpLock), with
// the acting pid, before and after: a Before hook runs while the lock is
// not yet taken, and one that kills the process there makes the lock fail,
// leaving the lock free for another process.
func TestSQLiteLockCallsRunHooks(t *testing.T) {
	w := lockWorld(t)
	a, b := w.Spawn(), w.Spawn()
	var mu sync.Mutex
	seen := map[string]int{}
	count := func(when string) func(fake.Event) error {
		return func(ev fake.Event) error {
			mu.Lock()
			defer mu.Unlock()
			if ev.PID == a.PID() {
				seen[when]++
			}
			return nil
		}
	}
	w.Before("lock", lockDB, count("before"))
	w.After("lock", lockDB, count("after"))
	la := newLocker(t, a, lockDB, form{"attach", true})
	if err := la.try(); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	if seen["before"] == 0 || seen["before"] != seen["after"] {
		t.Errorf("lock calls seen: %d before, %d after; want as many, and some", seen["before"], seen["after"])
	}
	mu.Unlock()

	// Killed before its next lock call, b takes nothing.
	w.Before("lock", lockDB, func(ev fake.Event) error {
		if ev.PID == b.PID() {
			b.Kill()
		}
		return nil
	})
	la.conn.Close()
	lb := newLocker(t, b, lockDB, form{"attach", true})
	if err := lb.try(); !errors.Is(err, fake.ErrKilled) && !errors.Is(err, sqlite3.IOERR) && !errors.Is(err, sqlite3.CANTOPEN) {
		t.Fatalf("lock by a process killed at its lock call: %v; want it to fail", err)
	}
	lc := newLocker(t, w.Spawn(), lockDB, form{"attach", true})
	if err := lc.try(); err != nil {
		t.Fatalf("after the killed process: %v; want the lock free", err)
	}
}

// Under WindowsSharing, a file SQLite has open can be neither removed nor
// renamed (fsx.InUse), as go-sqlite3's files on windows; once SQLite
// closes it, it can. A file open only through the FS can be, as ever.
func TestWindowsSharing(t *testing.T) {
	w := lockWorld(t)
	w.WindowsSharing()
	p := w.Spawn()
	fsys := p.Platform().FS
	c := connect(t, p, lockDB, fileFlags)
	if err := c.Exec(lockSQL); err != nil {
		t.Fatal(err)
	}
	if err := fsys.Remove(lockDB); !fsx.InUse(err) {
		t.Errorf("Remove of a file SQLite has open: %v; want it in use", err)
	}
	if err := fsys.Rename(lockDB, "/locks/b.db"); !fsx.InUse(err) {
		t.Errorf("Rename of a file SQLite has open: %v; want it in use", err)
	}
	if err := w.WriteFile("/locks/c.db", nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := fsys.Rename("/locks/c.db", lockDB); !fsx.InUse(err) {
		t.Errorf("Rename over a file SQLite has open: %v; want it in use", err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	f, err := fsys.OpenFile(lockDB, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := fsys.Remove(lockDB); err != nil {
		t.Errorf("Remove of a file open only through the FS: %v", err)
	}
}
