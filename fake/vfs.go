package fake

import (
	"errors"
	"io/fs"
	"os"
	"sync"
	"syscall"

	"github.com/ncruces/go-sqlite3"
	"github.com/ncruces/go-sqlite3/vfs"
)

// processVFS is one process's SQLite VFS. Its files are opened through the
// process's view of the filesystem, so hooks see SQLite's operations with
// the process's pid, an inode swapped at a path is what the next open gets,
// and once the process is killed every operation fails with ErrKilled
// (which SQLite reports as an I/O error, or CANTOPEN for an open).
type processVFS struct {
	p *Process
}

var _ vfs.VFS = (*processVFS)(nil)

// filePerm is what a database or journal the VFS creates is given: the
// 0666 that SQLite asks for, less the usual umask of 022.
const filePerm = 0o644

// Open opens name for SQLite. A name of "" is a temporary file, kept in
// memory: it is private to one connection, so nothing else could see it.
func (v *processVFS) Open(name string, flags vfs.OpenFlag) (vfs.File, vfs.OpenFlag, error) {
	if name == "" {
		t := &tempFile{p: v.p, f: file{m: v.p.u.fs, node: &inode{mode: 0o600}, readable: true, writable: true}}
		if err := t.alive("open"); err != nil {
			return nil, flags, openError(err)
		}
		return t, flags, nil
	}
	h, err := v.p.fs.OpenFile(name, osFlags(flags), filePerm)
	if err != nil {
		return nil, flags, openError(err)
	}
	vf := &vfsFile{f: h.(*file), p: v.p, locks: &v.p.u.locks, flags: flags}
	if err := v.p.u.fs.adopt(vf); err != nil {
		h.Close()
		return nil, flags, openError(&fs.PathError{Op: "open", Path: name, Err: err})
	}
	return vf, flags, nil
}

// osFlags turns SQLite's open flags into os.OpenFile's. A read-only open
// never creates, whatever else the flags say.
func osFlags(flags vfs.OpenFlag) int {
	if flags&vfs.OPEN_READWRITE == 0 {
		return os.O_RDONLY
	}
	of := os.O_RDWR
	if flags&vfs.OPEN_CREATE != 0 {
		of |= os.O_CREATE
		if flags&vfs.OPEN_EXCLUSIVE != 0 {
			of |= os.O_EXCL
		}
	}
	return of
}

// openError tags a failed open with the code SQLite expects: CANTOPEN, or
// CANTOPEN_ISDIR for a directory. The filesystem's error stays attached,
// so errors.Is finds fs.ErrNotExist or ErrKilled in SQLite's error.
func openError(err error) error {
	if errors.Is(err, syscall.EISDIR) {
		return vfs.SystemError(err, sqlite3.CANTOPEN_ISDIR)
	}
	return vfs.SystemError(err, sqlite3.CANTOPEN)
}

// adopt makes vf's handle drop vf's lock when it is released, however
// that comes (Close, or Kill before the open is done). A directory, which
// a read-only open allows, is refused: SQLite cannot use one.
func (m *memfs) adopt(vf *vfsFile) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	switch {
	case vf.f.closed:
		return ErrKilled // the only way a handle closes before it is returned
	case vf.f.node.isDir():
		return syscall.EISDIR
	}
	vf.f.onRelease = func() { vf.locks.release(vf) }
	return nil
}

// Delete removes name; a missing file is IOERR_DELETE_NOENT, which SQLite
// takes as done.
func (v *processVFS) Delete(name string, syncDir bool) error {
	err := v.p.fs.Remove(name)
	if errors.Is(err, fs.ErrNotExist) {
		return vfs.SystemError(err, sqlite3.IOERR_DELETE_NOENT)
	}
	return err
}

// Access tells whether name exists, or may be read (and written).
func (v *processVFS) Access(name string, flags vfs.AccessFlag) (bool, error) {
	info, err := v.p.fs.stat(name)
	switch {
	case errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR):
		return false, nil
	case err != nil:
		return false, err
	}
	perm := info.Mode().Perm()
	switch flags {
	case vfs.ACCESS_READWRITE:
		return perm&(permR|permW) == permR|permW, nil
	case vfs.ACCESS_READ:
		return perm&permR != 0, nil
	}
	return true, nil
}

// FullPathname cleans name into the absolute path the fake FS walks.
// Symlinks are left for the FS to follow when the file is opened.
func (v *processVFS) FullPathname(name string) (string, error) {
	return clean(name), nil
}

// vfsFile is a database or journal opened by SQLite: a handle of the fake
// FS, which the world counts (OpenFiles) and a Kill closes, and the SQLite
// lock the handle holds in the world's lock table. It has no shared
// memory, so a WAL database needs exclusive locking mode, as SQLite allows.
type vfsFile struct {
	f        *file
	p        *Process
	locks    *lockTable
	flags    vfs.OpenFlag
	level    vfs.LockLevel // guarded by locks.mu
	released bool          // guarded by locks.mu: the handle is closed
}

var (
	_ vfs.FileLockState = (*vfsFile)(nil)
	_ vfs.FileHasMoved  = (*vfsFile)(nil)
)

// ReadAt reads at off. A read that runs past the end of the file returns
// what there was with io.EOF, and SQLite fills the rest with zeros; any
// other short read would be an I/O error to it.
func (f *vfsFile) ReadAt(p []byte, off int64) (int, error) { return f.f.ReadAt(p, off) }

func (f *vfsFile) WriteAt(p []byte, off int64) (int, error) { return f.f.WriteAt(p, off) }

func (f *vfsFile) Truncate(size int64) error { return f.f.Truncate(size) }

func (f *vfsFile) Sync(vfs.SyncFlag) error { return f.f.Sync() }

func (f *vfsFile) Size() (int64, error) {
	info, err := f.f.Stat()
	if err != nil {
		return 0, err
	}
	return info.Size(), nil
}

func (f *vfsFile) Lock(level vfs.LockLevel) error {
	_, err := hooked(f, func() (struct{}, error) { return struct{}{}, f.locks.lock(f, level) })
	return err
}

func (f *vfsFile) Unlock(level vfs.LockLevel) error {
	_, err := hooked(f, func() (struct{}, error) { return struct{}{}, f.locks.unlock(f, level) })
	return err
}

func (f *vfsFile) CheckReservedLock() (bool, error) {
	return hooked(f, func() (bool, error) { return f.locks.reserved(f) })
}

// hooked runs a call at the lock table as an OpLock operation: Before
// hooks run first (and may stall the process there, or kill it), After
// hooks see its error. The lock table's answer is passed on as it is, so
// SQLite still sees BUSY; a hook's error fails the call as an I/O error.
// A dead process's calls run no hooks, as its filesystem operations do not.
func hooked[T any](f *vfsFile, body func() (T, error)) (T, error) {
	hs := f.p.u.hooks
	if !f.p.Alive() {
		return body()
	}
	ev := Event{Op: OpLock, Call: "lock", Path: clean(f.f.name), Handle: true, When: Before, PID: f.p.pid}
	if err := hs.fire(ev); err != nil {
		var zero T
		return zero, &fs.PathError{Op: "lock", Path: f.f.name, Err: err}
	}
	res, err := body()
	ev.When, ev.Err = After, err
	if herr := hs.fire(ev); herr != nil {
		err = &fs.PathError{Op: "lock", Path: f.f.name, Err: herr}
	}
	return res, err
}

// LockState is the level of the lock this file holds.
func (f *vfsFile) LockState() vfs.LockLevel { return f.locks.levelOf(f) }

// SectorSize is the usual disk's.
func (f *vfsFile) SectorSize() int { return 4096 }

// DeviceCharacteristics claims what the OS VFS claims on Linux, so that
// SQLite writes and syncs as it would there.
func (f *vfsFile) DeviceCharacteristics() vfs.DeviceCharacteristic {
	return vfs.IOCAP_POWERSAFE_OVERWRITE | vfs.IOCAP_SUBPAGE_READ
}

// HasMoved reports whether the file's name now names another file, or
// nothing: a database renamed, removed or swapped while open.
func (f *vfsFile) HasMoved() (bool, error) {
	mine, err := f.f.Stat()
	if err != nil {
		return false, err
	}
	now, err := f.p.fs.stat(f.f.name)
	if errors.Is(err, fs.ErrNotExist) {
		return true, nil
	}
	if err != nil {
		return false, err
	}
	return !sameInode(mine, now), nil
}

func sameInode(a, b fs.FileInfo) bool {
	x, y := a.Sys().(*InodeInfo), b.Sys().(*InodeInfo)
	return x.Ino == y.Ino && x.Birth.Equal(y.Birth)
}

// Close closes the handle, which drops whatever lock SQLite left on it:
// hooks before the close see the lock still held, hooks after see it
// gone. A file opened for deletion on close is removed after.
func (f *vfsFile) Close() error {
	err := f.f.Close()
	if f.flags&vfs.OPEN_DELETEONCLOSE != 0 {
		if rerr := f.p.fs.Remove(f.f.name); rerr != nil && !errors.Is(rerr, fs.ErrNotExist) {
			err = errors.Join(err, rerr)
		}
	}
	return err
}

func (f *vfsFile) readOnly() bool { return f.flags&vfs.OPEN_READWRITE == 0 }

// lockTable holds the world's SQLite locks: for each inode, the open VFS
// files holding a lock on it, each at its own level. A lock belongs to an
// open file, as an OFD lock does on Linux: two connections of one process
// conflict, and closing the file, or killing its process, drops the lock.
// Locking never waits: a conflict is SQLITE_BUSY, for SQLite's busy handler
// to wait out or not.
type lockTable struct {
	mu      sync.Mutex
	byInode map[*inode]map[*vfsFile]struct{}
}

// lock raises f's lock to want, as SQLite's xLock: SHARED from none,
// RESERVED from SHARED, EXCLUSIVE from SHARED or more. A write lock on a
// read-only file is IOERR_LOCK, as on the OS.
func (t *lockTable) lock(f *vfsFile, want vfs.LockLevel) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	switch {
	case !f.p.Alive():
		return &fs.PathError{Op: "lock", Path: f.f.name, Err: ErrKilled}
	case f.released:
		return &fs.PathError{Op: "lock", Path: f.f.name, Err: os.ErrClosed}
	case f.level >= want:
		return nil
	case !validRaise(f.level, want):
		return sqlite3.IOERR_LOCK
	case want >= vfs.LOCK_RESERVED && f.readOnly():
		return sqlite3.IOERR_LOCK
	}
	strongest, others := t.othersOn(f)
	if err := judgeRaise(want, strongest, others); err != nil {
		if want == vfs.LOCK_EXCLUSIVE && f.level >= vfs.LOCK_RESERVED {
			// The writer keeps PENDING, so no new reader comes in while
			// it waits for the old ones to leave. (Only a RESERVED one,
			// as the OS VFS does: the one writer there can be.)
			t.set(f, vfs.LOCK_PENDING)
		}
		return err
	}
	t.set(f, want)
	return nil
}

// validRaise reports whether SQLite may ask to go from have to want.
// PENDING is never asked for: it is where a refused EXCLUSIVE stops.
func validRaise(have, want vfs.LockLevel) bool {
	switch want {
	case vfs.LOCK_SHARED:
		return have == vfs.LOCK_NONE
	case vfs.LOCK_RESERVED:
		return have == vfs.LOCK_SHARED
	case vfs.LOCK_EXCLUSIVE:
		return have >= vfs.LOCK_SHARED
	}
	return false
}

// judgeRaise decides a raise to want, given the strongest lock the other
// files of the inode hold and how many of them hold one: many SHARED at
// once; one RESERVED; PENDING lets no new SHARED in; EXCLUSIVE only alone.
func judgeRaise(want, strongest vfs.LockLevel, others int) error {
	switch {
	case want == vfs.LOCK_SHARED && strongest >= vfs.LOCK_PENDING:
		return sqlite3.BUSY
	case want == vfs.LOCK_RESERVED && strongest >= vfs.LOCK_RESERVED:
		return sqlite3.BUSY
	case want == vfs.LOCK_EXCLUSIVE && others > 0:
		return sqlite3.BUSY
	}
	return nil
}

// unlock lowers f's lock to SHARED or NONE. For a killed process, whose
// locks are gone already, it reports ErrKilled: SQLite unlocks after a
// failed operation, and the error it keeps is the last one it was told.
func (t *lockTable) unlock(f *vfsFile, to vfs.LockLevel) error {
	if to != vfs.LOCK_NONE && to != vfs.LOCK_SHARED {
		return sqlite3.IOERR_UNLOCK
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if f.level > to {
		t.set(f, to)
	}
	if !f.p.Alive() {
		return &fs.PathError{Op: "unlock", Path: f.f.name, Err: ErrKilled}
	}
	return nil
}

// reserved reports whether f, or another file of its inode, holds
// RESERVED or more: whether some connection is about to write.
func (t *lockTable) reserved(f *vfsFile) (bool, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !f.p.Alive() {
		return false, &fs.PathError{Op: "lock", Path: f.f.name, Err: ErrKilled}
	}
	strongest, _ := t.othersOn(f)
	return max(f.level, strongest) >= vfs.LOCK_RESERVED, nil
}

func (t *lockTable) levelOf(f *vfsFile) vfs.LockLevel {
	t.mu.Lock()
	defer t.mu.Unlock()
	return f.level
}

// othersOn returns the strongest lock held on f's inode by other files,
// and how many other files hold one. t.mu is held.
func (t *lockTable) othersOn(f *vfsFile) (strongest vfs.LockLevel, n int) {
	for g := range t.byInode[f.f.node] {
		if g != f {
			strongest = max(strongest, g.level)
			n++
		}
	}
	return strongest, n
}

// set puts f's lock at level, entering or leaving the table. t.mu is held.
func (t *lockTable) set(f *vfsFile, level vfs.LockLevel) {
	f.level = level
	node := f.f.node
	holders := t.byInode[node]
	if level == vfs.LOCK_NONE {
		delete(holders, f)
		if len(holders) == 0 {
			delete(t.byInode, node)
		}
		return
	}
	if holders == nil {
		if t.byInode == nil {
			t.byInode = make(map[*inode]map[*vfsFile]struct{})
		}
		holders = make(map[*vfsFile]struct{})
		t.byInode[node] = holders
	}
	holders[f] = struct{}{}
}

// release drops f's lock for good: its handle is closed.
func (t *lockTable) release(f *vfsFile) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.set(f, vfs.LOCK_NONE)
	f.released = true
}

// dropAllOf drops every lock p holds, at once, as the kernel does when a
// process dies. p is marked dead already, so it takes no lock after this.
func (t *lockTable) dropAllOf(p *Process) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, holders := range t.byInode {
		for f := range holders {
			if f.p == p {
				t.set(f, vfs.LOCK_NONE)
			}
		}
	}
}

// tempFile is a temporary file of one connection (a temp database, a
// statement journal), kept in memory: an inode no directory names, which
// nothing else ever opens, so it needs no lock and runs no hook, and goes
// when closed.
type tempFile struct {
	p *Process
	f file
}

func (t *tempFile) alive(op string) error {
	if !t.p.Alive() {
		return &fs.PathError{Op: op, Path: "(temporary)", Err: ErrKilled}
	}
	return nil
}

func (t *tempFile) ReadAt(p []byte, off int64) (int, error) {
	if err := t.alive("read"); err != nil {
		return 0, err
	}
	return t.f.readAt(p, off)
}

func (t *tempFile) WriteAt(p []byte, off int64) (int, error) {
	if err := t.alive("write"); err != nil {
		return 0, err
	}
	return t.f.writeAt(p, off)
}

func (t *tempFile) Truncate(size int64) error {
	if err := t.alive("truncate"); err != nil {
		return err
	}
	t.f.node.data = resize(t.f.node.data, size)
	return nil
}

func (t *tempFile) Sync(vfs.SyncFlag) error { return t.alive("sync") }

func (t *tempFile) Size() (int64, error) { return int64(len(t.f.node.data)), t.alive("stat") }

func (t *tempFile) Lock(vfs.LockLevel) error { return t.alive("lock") }

func (t *tempFile) Unlock(vfs.LockLevel) error { return nil }

func (t *tempFile) CheckReservedLock() (bool, error) { return false, t.alive("lock") }

func (t *tempFile) SectorSize() int { return 4096 }

func (t *tempFile) DeviceCharacteristics() vfs.DeviceCharacteristic {
	return vfs.IOCAP_POWERSAFE_OVERWRITE | vfs.IOCAP_SUBPAGE_READ
}

func (t *tempFile) Close() error {
	t.f.node.data = nil
	return nil
}
