package fakesql

import (
	"errors"
	"io/fs"
	"os"
	"syscall"

	"github.com/ncruces/go-sqlite3"
	"github.com/ncruces/go-sqlite3/vfs"

	"github.com/proclock/proclock/fake/internal/sqlfile"
)

// processVFS is one process's SQLite VFS, over its view of the filesystem:
// hooks see SQLite's operations with its pid, which fail once it is killed.
type processVFS struct{ fsys sqlfile.FS }

var _ vfs.VFS = (*processVFS)(nil)

// filePerm is SQLite's 0666 less the usual umask.
const filePerm = 0o644

func (v *processVFS) Open(name string, flags vfs.OpenFlag) (vfs.File, vfs.OpenFlag, error) {
	f, err := v.fsys.SQLiteOpen(name, osFlags(flags), filePerm)
	if err != nil {
		return nil, flags, openError(err)
	}
	return &vfsFile{File: f, fsys: v.fsys, flags: flags}, flags, nil
}

// osFlags turns SQLite's open flags into os.OpenFile's; a read-only open
// never creates.
func osFlags(flags vfs.OpenFlag) int {
	switch {
	case flags&vfs.OPEN_READWRITE == 0:
		return os.O_RDONLY
	case flags&vfs.OPEN_CREATE == 0:
		return os.O_RDWR
	case flags&vfs.OPEN_EXCLUSIVE == 0:
		return os.O_RDWR | os.O_CREATE
	}
	return os.O_RDWR | os.O_CREATE | os.O_EXCL
}

// openError tags a failed open with SQLite's code, keeping the cause for
// errors.Is (fs.ErrNotExist, fake.ErrKilled).
func openError(err error) error {
	if errors.Is(err, syscall.EISDIR) {
		return vfs.SystemError(err, sqlite3.CANTOPEN_ISDIR)
	}
	return vfs.SystemError(err, sqlite3.CANTOPEN)
}

// Delete removes name; a missing one is IOERR_DELETE_NOENT, which SQLite
// takes as done.
func (v *processVFS) Delete(name string, syncDir bool) error {
	err := v.fsys.Remove(name)
	if errors.Is(err, fs.ErrNotExist) {
		return vfs.SystemError(err, sqlite3.IOERR_DELETE_NOENT)
	}
	return err
}

func (v *processVFS) Access(name string, flags vfs.AccessFlag) (bool, error) {
	info, err := v.fsys.SQLiteStat(name)
	switch {
	case errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR):
		return false, nil
	case err != nil:
		return false, err
	}
	perm := info.Mode().Perm() // the owner's: every fake process is the owner
	switch flags {
	case vfs.ACCESS_READWRITE:
		return perm&0o600 == 0o600, nil
	case vfs.ACCESS_READ:
		return perm&0o400 != 0, nil
	}
	return true, nil
}

func (v *processVFS) FullPathname(name string) (string, error) { return sqlfile.Clean(name), nil }

// vfsFile is a file opened by SQLite, whose lock goes when it closes, as an
// OFD lock does. There is no shared memory: WAL needs exclusive locking.
// Its ReadAt is short only at the end, with io.EOF, as SQLite wants.
type vfsFile struct {
	sqlfile.File
	fsys  sqlfile.FS
	flags vfs.OpenFlag
}

var (
	_ vfs.FileLockState = (*vfsFile)(nil)
	_ vfs.FileHasMoved  = (*vfsFile)(nil)
)

func (f *vfsFile) Sync(vfs.SyncFlag) error { return f.File.Sync() }

func (f *vfsFile) Size() (int64, error) {
	info, err := f.Stat()
	if err != nil {
		return 0, err
	}
	return info.Size(), nil
}

func (f *vfsFile) Lock(l vfs.LockLevel) error { return answer(f.SQLiteLock(sqlfile.Level(l))) }

func (f *vfsFile) Unlock(l vfs.LockLevel) error { return answer(f.SQLiteUnlock(sqlfile.Level(l))) }

// answer is the lock table's answer as SQLite's code; an I/O failure stays.
func answer(err error) error {
	switch err {
	case sqlfile.Busy:
		return sqlite3.BUSY
	case sqlfile.BadLock:
		return sqlite3.IOERR_LOCK
	}
	return err
}

func (f *vfsFile) LockState() vfs.LockLevel { return vfs.LockLevel(f.SQLiteLockState()) }

func (f *vfsFile) SectorSize() int { return 4096 }

// DeviceCharacteristics claims what the OS VFS claims on linux.
func (f *vfsFile) DeviceCharacteristics() vfs.DeviceCharacteristic {
	return vfs.IOCAP_POWERSAFE_OVERWRITE | vfs.IOCAP_SUBPAGE_READ
}

// Close drops whatever lock SQLite left, and removes a file opened for
// deletion on close.
func (f *vfsFile) Close() error {
	err := f.File.Close()
	if f.flags&vfs.OPEN_DELETEONCLOSE != 0 && f.Name() != "" {
		if rerr := f.fsys.Remove(f.Name()); rerr != nil && !errors.Is(rerr, fs.ErrNotExist) {
			err = errors.Join(err, rerr)
		}
	}
	return err
}
