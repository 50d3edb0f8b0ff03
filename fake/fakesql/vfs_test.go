package fakesql

import (
	"errors"
	"github.com/proclock/proclock/lockfs"
	"io"
	"io/fs"
	"os"
	"testing"

	"github.com/ncruces/go-sqlite3"
	"github.com/ncruces/go-sqlite3/vfs"

	"github.com/proclock/proclock/fake"
)

const lockDB = "/locks/a.db"

func lockWorld(t *testing.T) *fake.World {
	t.Helper()
	w := fake.New()
	if err := w.Mkdir("/locks", 0o755); err != nil {
		t.Fatal(err)
	}
	return w
}

const dbFlags = vfs.OPEN_MAIN_DB | vfs.OPEN_READWRITE | vfs.OPEN_CREATE

// vfsOf returns p's registered VFS.
func vfsOf(t *testing.T, p *fake.Process) vfs.VFS {
	t.Helper()
	v := vfs.Find(vfsName(p))
	if v == nil {
		t.Fatalf("pid %d: no VFS registered as %q", p.PID(), vfsName(p))
	}
	return v
}

// openVFS opens name through p's VFS, closed when the test ends.
func openVFS(t *testing.T, p *fake.Process, name string, flags vfs.OpenFlag) vfs.File {
	t.Helper()
	f, _, err := vfsOf(t, p).Open(name, flags)
	if err != nil {
		t.Fatalf("pid %d: VFS open %s: %v", p.PID(), name, err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

// The lock levels of SQLite, between three open files of one database:
// the first two of one process, the third of another. Each step raises
// (Lock) or lowers (Unlock) one file's lock, or asks CheckReservedLock, and
// says what must come of it and the level the file is at after.
func TestVFSLockLevels(t *testing.T) {
	const (
		none      = vfs.LOCK_NONE
		shared    = vfs.LOCK_SHARED
		reserved  = vfs.LOCK_RESERVED
		pending   = vfs.LOCK_PENDING
		exclusive = vfs.LOCK_EXCLUSIVE
	)
	type op int
	const (
		lock op = iota
		unlock
		check // CheckReservedLock; busy means it reported true
	)
	steps := []struct {
		file  int
		op    op
		level vfs.LockLevel
		busy  bool
		after vfs.LockLevel
	}{
		{0, lock, shared, false, shared},
		{1, lock, shared, false, shared}, // many readers, even of one process
		{2, lock, shared, false, shared},
		{2, check, 0, false, shared},       // nobody is about to write
		{1, lock, exclusive, true, shared}, // straight from SHARED: refused, no PENDING kept
		{2, unlock, none, false, none},
		{2, lock, shared, false, shared}, // so readers still come in
		{0, lock, reserved, false, reserved},
		{1, lock, reserved, true, shared}, // one RESERVED at a time
		{2, check, 0, true, shared},
		{0, check, 0, true, reserved},
		{0, lock, exclusive, true, pending}, // others read: stop at PENDING
		{2, unlock, none, false, none},
		{2, lock, shared, true, none},      // PENDING lets no new reader in
		{1, lock, shared, false, shared},   // a lock already held is kept
		{1, lock, exclusive, true, shared}, // nor a second writer
		{0, lock, exclusive, true, pending},
		{1, unlock, none, false, none},
		{0, lock, exclusive, false, exclusive}, // alone now
		{1, lock, shared, true, none},
		{2, check, 0, true, none},
		{0, unlock, shared, false, shared},
		{1, lock, shared, false, shared},
		{2, check, 0, false, none},
		{0, unlock, none, false, none},
		{1, unlock, none, false, none},
		{2, lock, shared, false, shared},
		{2, lock, exclusive, false, exclusive}, // straight from SHARED when alone
		{0, lock, shared, true, none},
	}

	w := lockWorld(t)
	a, b := w.Spawn(), w.Spawn()
	files := []vfs.File{
		openVFS(t, a, lockDB, dbFlags),
		openVFS(t, a, lockDB, dbFlags),
		openVFS(t, b, lockDB, dbFlags),
	}
	for i, s := range steps {
		f := files[s.file]
		var busy bool
		var err error
		switch s.op {
		case lock:
			err = f.Lock(s.level)
			busy = errors.Is(err, sqlite3.BUSY)
		case unlock:
			err = f.Unlock(s.level)
		case check:
			busy, err = f.CheckReservedLock()
		}
		if err != nil && !busy {
			t.Fatalf("step %d (file %d): %v", i, s.file, err)
		}
		if busy != s.busy {
			t.Errorf("step %d (file %d, op %d, level %d): busy %v, want %v", i, s.file, s.op, s.level, busy, s.busy)
		}
		if got := f.(vfs.FileLockState).LockState(); got != s.after {
			t.Errorf("step %d (file %d): at level %d after, want %d", i, s.file, got, s.after)
		}
	}

	// Closing a file, or killing its process, drops its lock.
	if err := files[2].Close(); err != nil {
		t.Fatal(err)
	}
	if err := files[0].Lock(shared); err != nil {
		t.Fatalf("SHARED after the EXCLUSIVE holder's file closed: %v", err)
	}
	if err := files[0].Lock(exclusive); err != nil {
		t.Fatalf("EXCLUSIVE alone: %v", err)
	}
	a.Kill()
	c := openVFS(t, b, lockDB, dbFlags)
	if err := c.Lock(shared); err != nil {
		t.Errorf("SHARED after the EXCLUSIVE holder was killed: %v", err)
	}
	if err := files[0].Lock(exclusive); !errors.Is(err, fake.ErrKilled) {
		t.Errorf("a dead process's Lock: %v; want ErrKilled", err)
	}
}

// A lock goes with its handle: hooks before the close of a locked file see
// the lock held, hooks after see it gone.
func TestVFSCloseDropsTheLockWithTheHandle(t *testing.T) {
	w := lockWorld(t)
	a, b := w.Spawn(), w.Spawn()
	held := openVFS(t, a, lockDB, dbFlags)
	other := openVFS(t, b, lockDB, dbFlags)
	for _, level := range []vfs.LockLevel{vfs.LOCK_SHARED, vfs.LOCK_EXCLUSIVE} {
		if err := held.Lock(level); err != nil {
			t.Fatal(err)
		}
	}
	seen := map[string]error{}
	probe := func(when string) func(fake.Event) error {
		return func(ev fake.Event) error {
			if ev.PID == a.PID() {
				seen[when] = other.Lock(vfs.LOCK_SHARED)
				other.Unlock(vfs.LOCK_NONE)
			}
			return nil
		}
	}
	w.Before("close", lockDB, probe("before"))
	w.After("close", lockDB, probe("after"))
	if err := held.Close(); err != nil {
		t.Fatal(err)
	}
	if !errors.Is(seen["before"], sqlite3.BUSY) {
		t.Errorf("a lock attempt before the close: %v; want SQLITE_BUSY", seen["before"])
	}
	if err, ok := seen["after"]; !ok || err != nil {
		t.Errorf("a lock attempt after the close: %v (made: %v); want success", err, ok)
	}
}

// A read-only file never gets a write lock; the OS answers IOERR_LOCK.
func TestVFSReadOnlyFileTakesNoWriteLock(t *testing.T) {
	w := lockWorld(t)
	p := w.Spawn()
	openVFS(t, p, lockDB, dbFlags).Close()
	f := openVFS(t, p, lockDB, vfs.OPEN_MAIN_DB|vfs.OPEN_READONLY)
	if err := f.Lock(vfs.LOCK_SHARED); err != nil {
		t.Fatal(err)
	}
	err := f.Lock(vfs.LOCK_RESERVED)
	if err == nil || errors.Is(err, sqlite3.BUSY) {
		t.Errorf("RESERVED on a read-only file: %v; want an I/O error", err)
	}
}

// Open honours SQLite's flags, with the filesystem's answer: read-only
// and create-less opens never create, an exclusive create fails on an
// existing file, a directory is refused, and a delete-on-close file goes
// when closed.
func TestVFSOpen(t *testing.T) {
	const missing, existing = "/locks/missing.db", "/locks/existing.db"
	cases := []struct {
		name    string
		path    string
		flags   vfs.OpenFlag
		fails   bool
		existAt bool // whether path exists after the open (and close)
	}{
		{"read-only, missing", missing, vfs.OPEN_MAIN_DB | vfs.OPEN_READONLY, true, false},
		{"read-only with create, missing", missing, vfs.OPEN_MAIN_DB | vfs.OPEN_READONLY | vfs.OPEN_CREATE, true, false},
		{"read-write, missing", missing, vfs.OPEN_MAIN_DB | vfs.OPEN_READWRITE, true, false},
		{"create, missing", missing, dbFlags, false, true},
		{"create exclusive, missing", missing, dbFlags | vfs.OPEN_EXCLUSIVE, false, true},
		{"create exclusive, existing", existing, dbFlags | vfs.OPEN_EXCLUSIVE, true, true},
		{"read-only, existing", existing, vfs.OPEN_MAIN_DB | vfs.OPEN_READONLY, false, true},
		{"directory, read-only", "/locks", vfs.OPEN_MAIN_DB | vfs.OPEN_READONLY, true, true},
		{"directory, read-write", "/locks", dbFlags, true, true},
		{"delete on close", missing, dbFlags | vfs.OPEN_DELETEONCLOSE, false, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			w := lockWorld(t)
			if err := w.WriteFile(existing, nil, 0o644); err != nil {
				t.Fatal(err)
			}
			p := w.Spawn()
			f, out, err := vfsOf(t, p).Open(c.path, c.flags)
			if (err != nil) != c.fails {
				t.Fatalf("open: %v; want failure %v", err, c.fails)
			}
			if err == nil {
				if out&(vfs.OPEN_READONLY|vfs.OPEN_READWRITE) != c.flags&(vfs.OPEN_READONLY|vfs.OPEN_READWRITE) {
					t.Errorf("open returned flags %#x for %#x", out, c.flags)
				}
				if err := f.Close(); err != nil {
					t.Errorf("close: %v", err)
				}
			}
			if _, err := w.FS().Lstat(c.path); (err == nil) != c.existAt {
				t.Errorf("after the open, stat: %v; want existence %v", err, c.existAt)
			}
			if n := w.OpenFiles(); n != 0 {
				t.Errorf("%d files left open", n)
			}
		})
	}
}

// ReadAt returns fewer bytes than asked only at the end of the file, and
// then with io.EOF, for files of the FS and temporary files alike; SQLite
// reads a short read without io.EOF as an error.
func TestVFSReadAtShortOnlyAtEOF(t *testing.T) {
	w := lockWorld(t)
	p := w.Spawn()
	data := []byte("0123456789")
	if err := w.WriteFile(lockDB, data, 0o644); err != nil {
		t.Fatal(err)
	}
	temp := openVFS(t, p, "", vfs.OPEN_TEMP_DB|vfs.OPEN_READWRITE|vfs.OPEN_CREATE|vfs.OPEN_DELETEONCLOSE)
	if _, err := temp.WriteAt(data, 0); err != nil {
		t.Fatal(err)
	}
	for name, f := range map[string]vfs.File{"file": openVFS(t, p, lockDB, dbFlags), "temp": temp} {
		for _, c := range []struct {
			off, size, n int
			eof          bool
		}{
			{0, 10, 10, false},
			{2, 4, 4, false},
			{0, 20, 10, true},
			{8, 4, 2, true},
			{10, 4, 0, true},
			{100, 4, 0, true},
		} {
			buf := make([]byte, c.size)
			n, err := f.ReadAt(buf, int64(c.off))
			if n != c.n || (err == io.EOF) != c.eof || (err != nil && err != io.EOF) {
				t.Errorf("%s: ReadAt(%d bytes at %d) = %d, %v; want %d, EOF %v", name, c.size, c.off, n, err, c.n, c.eof)
			}
		}
		if size, err := f.Size(); size != int64(len(data)) || err != nil {
			t.Errorf("%s: Size = %d, %v; want %d", name, size, err, len(data))
		}
	}
	if files := readDir(t, w.FS(), "/tmp"); len(files) != 0 {
		t.Errorf("a temporary file left %d files in /tmp", len(files))
	}
}

// Delete and Access are the filesystem's remove and stat, as SQLite wants
// them: a missing file is IOERR_DELETE_NOENT to delete and simply absent
// to Access.
func TestVFSDeleteAndAccess(t *testing.T) {
	w := lockWorld(t)
	p := w.Spawn()
	v := vfsOf(t, p)
	if err := w.WriteFile(lockDB, nil, 0o444); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		flags vfs.AccessFlag
		want  bool
	}{{vfs.ACCESS_EXISTS, true}, {vfs.ACCESS_READ, true}, {vfs.ACCESS_READWRITE, false}} {
		if ok, err := v.Access(lockDB, c.flags); ok != c.want || err != nil {
			t.Errorf("Access(%d) of a 0444 file = %v, %v; want %v", c.flags, ok, err, c.want)
		}
	}
	if err := v.Delete(lockDB, false); err != nil {
		t.Fatal(err)
	}
	if ok, err := v.Access(lockDB, vfs.ACCESS_EXISTS); ok || err != nil {
		t.Errorf("Access of a deleted file = %v, %v; want false, nil", ok, err)
	}
	if err := v.Delete(lockDB, false); err == nil {
		t.Error("Delete of a missing file succeeded")
	}
	if _, err := w.FS().Lstat(lockDB); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("stat after Delete: %v", err)
	}
	if got, _ := v.FullPathname("locks/../locks//a.db"); got != lockDB {
		t.Errorf("FullPathname = %q; want %q", got, lockDB)
	}
}

func readDir(t *testing.T, fsys lockfs.FS, dir string) []string {
	t.Helper()
	d, err := fsys.OpenFile(dir, os.O_RDONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	names, err := d.(interface{ Readdirnames(int) ([]string, error) }).Readdirnames(-1)
	if err != nil {
		t.Fatal(err)
	}
	return names
}
