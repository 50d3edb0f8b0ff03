package fakesql

import (
	"errors"
	"io/fs"
	"os"
	"syscall"

	"github.com/ncruces/go-sqlite3"
	"github.com/ncruces/go-sqlite3/vfs"

	"github.com/proclock/proclock/fake"
	"github.com/proclock/proclock/fake/internal/sqlfile"
)

// processVFS is one process's SQLite VFS, over the process's view of the
// filesystem (its sqlfile powers): hooks see SQLite's operations with its
// pid, and once it is killed they fail with fake.ErrKilled (an I/O error
// to SQLite, or CANTOPEN).
type processVFS struct {
	p    *fake.Process
	fsys sqlfile.FS
}

var _ vfs.VFS = (*processVFS)(nil)

// filePerm is what a database or journal the VFS creates is given: the
// 0666 that SQLite asks for, less the usual umask of 022.
const filePerm = 0o644

// Open opens name for SQLite; "" is a temporary file.
func (v *processVFS) Open(name string, flags vfs.OpenFlag) (vfs.File, vfs.OpenFlag, error) {
	f, err := v.fsys.SQLiteOpen(name, osFlags(flags), filePerm)
	if err != nil {
		return nil, flags, openError(err)
	}
	return &vfsFile{f: f, fsys: v.fsys, flags: flags}, flags, nil
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
// so errors.Is finds fs.ErrNotExist or fake.ErrKilled in SQLite's error.
func openError(err error) error {
	if errors.Is(err, syscall.EISDIR) {
		return vfs.SystemError(err, sqlite3.CANTOPEN_ISDIR)
	}
	return vfs.SystemError(err, sqlite3.CANTOPEN)
}

// Delete removes name; a missing file is IOERR_DELETE_NOENT, which SQLite
// takes as done.
func (v *processVFS) Delete(name string, syncDir bool) error {
	err := v.fsys.Remove(name)
	if errors.Is(err, fs.ErrNotExist) {
		return vfs.SystemError(err, sqlite3.IOERR_DELETE_NOENT)
	}
	return err
}

// Access tells whether name exists, or may be read (and written).
func (v *processVFS) Access(name string, flags vfs.AccessFlag) (bool, error) {
	info, err := v.fsys.SQLiteStat(name)
	switch {
	case errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR):
		return false, nil
	case err != nil:
		return false, err
	}
	const r, w = 0o400, 0o200 // the owner's: every fake process is the owner
	perm := info.Mode().Perm()
	switch flags {
	case vfs.ACCESS_READWRITE:
		return perm&(r|w) == r|w, nil
	case vfs.ACCESS_READ:
		return perm&r != 0, nil
	}
	return true, nil
}

// FullPathname cleans name into the absolute path the fake FS walks.
// Symlinks are left for the FS to follow when the file is opened.
func (v *processVFS) FullPathname(name string) (string, error) {
	return clean(name), nil
}

// vfsFile is a file opened by SQLite: a handle of the fake FS, whose lock
// is kept in its inode's lock table and goes when the handle closes, as
// an OFD lock on Linux. The table's answers reach SQLite as its codes.
// There is no shared memory: a WAL database needs exclusive locking mode,
// as SQLite allows.
type vfsFile struct {
	f     sqlfile.File
	fsys  sqlfile.FS
	flags vfs.OpenFlag
}

var (
	_ vfs.FileLockState = (*vfsFile)(nil)
	_ vfs.FileHasMoved  = (*vfsFile)(nil)
)

// ReadAt reads at off; a read past the end returns what there was with
// io.EOF (SQLite fills the rest with zeros; any other short read would be
// an I/O error to it).
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

// Lock raises the file's lock to want (sqlfile.File.SQLiteLock).
func (f *vfsFile) Lock(want vfs.LockLevel) error {
	return answer(f.f.SQLiteLock(sqlfile.Level(want)))
}

// Unlock lowers the file's lock to SHARED or NONE.
func (f *vfsFile) Unlock(to vfs.LockLevel) error {
	return answer(f.f.SQLiteUnlock(sqlfile.Level(to)))
}

// answer is the lock table's answer as SQLite's code; an I/O failure (a
// hook's, a killed process's) stays as it is.
func answer(err error) error {
	switch err {
	case sqlfile.Busy:
		return sqlite3.BUSY
	case sqlfile.BadLock:
		return sqlite3.IOERR_LOCK
	case sqlfile.BadUnlock:
		return sqlite3.IOERR_UNLOCK
	}
	return err
}

// CheckReservedLock reports whether this file, or another of its inode,
// holds RESERVED or more: whether some connection is about to write.
func (f *vfsFile) CheckReservedLock() (bool, error) { return f.f.SQLiteReserved() }

// LockState is the level of the lock this file holds.
func (f *vfsFile) LockState() vfs.LockLevel { return vfs.LockLevel(f.f.SQLiteLockState()) }

// SectorSize is the usual disk's.
func (f *vfsFile) SectorSize() int { return 4096 }

// DeviceCharacteristics claims what the OS VFS claims on Linux, so that
// SQLite writes and syncs as it would there.
func (f *vfsFile) DeviceCharacteristics() vfs.DeviceCharacteristic {
	return vfs.IOCAP_POWERSAFE_OVERWRITE | vfs.IOCAP_SUBPAGE_READ
}

// HasMoved reports whether the file's name now names another file, or
// nothing: a database renamed, removed or swapped while open.
func (f *vfsFile) HasMoved() (bool, error) { return f.f.SQLiteHasMoved() }

// Close closes the handle, which drops whatever lock SQLite left on it:
// hooks before the close see the lock still held, hooks after see it
// gone. A file opened for deletion on close is removed after.
func (f *vfsFile) Close() error {
	err := f.f.Close()
	if f.flags&vfs.OPEN_DELETEONCLOSE != 0 && f.f.Name() != "" {
		if rerr := f.fsys.Remove(f.f.Name()); rerr != nil && !errors.Is(rerr, fs.ErrNotExist) {
			err = errors.Join(err, rerr)
		}
	}
	return err
}
