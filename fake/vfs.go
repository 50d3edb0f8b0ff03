package fake

import (
	"errors"
	"io/fs"
	"os"
	"syscall"

	"github.com/ncruces/go-sqlite3"
	"github.com/ncruces/go-sqlite3/vfs"
)

// processVFS is one process's SQLite VFS, over the process's view of the
// filesystem: hooks see SQLite's operations with its pid, and once it is
// killed they fail with ErrKilled (an I/O error to SQLite, or CANTOPEN).
type processVFS struct {
	p *Process
}

var _ vfs.VFS = (*processVFS)(nil)

// filePerm is what a database or journal the VFS creates is given: the
// 0666 that SQLite asks for, less the usual umask of 022.
const filePerm = 0o644

// Open opens name for SQLite. A name of "" is a temporary file: an inode
// no directory names, private to one connection, which runs no hook and
// which the world does not count as open.
func (v *processVFS) Open(name string, flags vfs.OpenFlag) (vfs.File, vfs.OpenFlag, error) {
	var f *file
	if name == "" {
		f = &file{description: &description{m: v.p.u.fs, by: v.p.fs, node: &inode{mode: 0o600}, readable: true, writable: true}}
	} else {
		h, err := v.p.fs.OpenFile(name, osFlags(flags), filePerm)
		if err != nil {
			return nil, flags, openError(err)
		}
		f = h.(*file)
		f.m.mu.Lock()
		f.unshared = true // as go-sqlite3 opens on windows
		f.m.mu.Unlock()
	}
	if err := usable(f); err != nil {
		f.m.closeFile(f.description)
		return nil, flags, openError(&fs.PathError{Op: "open", Path: name, Err: err})
	}
	return &vfsFile{f: f, flags: flags}, flags, nil
}

// usable refuses what SQLite cannot use: a handle of a process killed
// before the open was done, or a directory, which a read-only open allows.
func usable(f *file) error {
	f.m.mu.Lock()
	defer f.m.mu.Unlock()
	switch {
	case f.by.dead():
		return ErrKilled
	case f.node.isDir():
		return syscall.EISDIR
	}
	return nil
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

// vfsFile is a file opened by SQLite: a handle of the fake FS, whose lock
// is kept in its inode's lock table and goes when the handle closes (a
// Kill closes it too, and so does the collector, once a connection left
// unclosed is garbage), as an OFD lock on Linux. Locking never waits: a
// conflict is SQLITE_BUSY, for SQLite's busy handler. The lock calls are
// OpLock operations, which hooks see; the table's answer reaches SQLite as
// it is. There is no shared memory: a WAL database needs exclusive locking
// mode, as SQLite allows.
type vfsFile struct {
	f     *file
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

// Lock raises the file's lock to want, as SQLite's xLock: SHARED from
// none, RESERVED from SHARED, EXCLUSIVE from SHARED or more. Many SHARED
// at once; one RESERVED; PENDING lets no new SHARED in; EXCLUSIVE only
// alone. A write lock on a read-only file is IOERR_LOCK, as on the OS.
func (f *vfsFile) Lock(want vfs.LockLevel) error {
	return f.locking(func(have, strongest vfs.LockLevel, others int) error {
		switch {
		case have >= want:
			return nil
		case !validRaise(have, want), want >= vfs.LOCK_RESERVED && f.flags&vfs.OPEN_READWRITE == 0:
			return sqlite3.IOERR_LOCK
		case want == vfs.LOCK_SHARED && strongest >= vfs.LOCK_PENDING,
			want == vfs.LOCK_RESERVED && strongest >= vfs.LOCK_RESERVED,
			want == vfs.LOCK_EXCLUSIVE && others > 0:
			if want == vfs.LOCK_EXCLUSIVE && have >= vfs.LOCK_RESERVED {
				// The writer keeps PENDING, so no new reader comes in while
				// it waits for the old ones to leave. (Only a RESERVED one,
				// as the OS VFS does: the one writer there can be.)
				f.set(vfs.LOCK_PENDING)
			}
			return sqlite3.BUSY
		}
		f.set(want)
		return nil
	})
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

// Unlock lowers the file's lock to SHARED or NONE.
func (f *vfsFile) Unlock(to vfs.LockLevel) error {
	return f.locking(func(have, _ vfs.LockLevel, _ int) error {
		if to != vfs.LOCK_NONE && to != vfs.LOCK_SHARED {
			return sqlite3.IOERR_UNLOCK
		}
		f.set(min(have, to))
		return nil
	})
}

// CheckReservedLock reports whether this file, or another of its inode,
// holds RESERVED or more: whether some connection is about to write.
func (f *vfsFile) CheckReservedLock() (reserved bool, err error) {
	err = f.locking(func(have, strongest vfs.LockLevel, _ int) error {
		reserved = max(have, strongest) >= vfs.LOCK_RESERVED
		return nil
	})
	return reserved, err
}

// locking runs body on the lock table, as an OpLock operation, with the
// file's level, the strongest level the other files of its inode hold and
// how many of them hold one.
func (f *vfsFile) locking(body func(have, strongest vfs.LockLevel, others int) error) error {
	return doErr(f.f, OpLock, "lock", func() error {
		var strongest vfs.LockLevel
		others := 0
		for g, level := range f.f.node.locks {
			if g != f.f.description {
				strongest = max(strongest, level)
				others++
			}
		}
		return body(f.f.node.locks[f.f.description], strongest, others)
	})
}

// set puts the file's lock at level; memfs.mu is held.
func (f *vfsFile) set(level vfs.LockLevel) {
	n := f.f.node
	if level == vfs.LOCK_NONE {
		delete(n.locks, f.f.description)
		return
	}
	if n.locks == nil {
		n.locks = make(map[*description]vfs.LockLevel)
	}
	n.locks[f.f.description] = level
}

// LockState is the level of the lock this file holds.
func (f *vfsFile) LockState() vfs.LockLevel {
	f.f.m.mu.Lock()
	defer f.f.m.mu.Unlock()
	return f.f.node.locks[f.f.description]
}

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
	return run(f.f.by, step{op: OpStat, verb: "stat", path: f.f.name}, func() (bool, error) {
		w, err := f.f.m.resolve(f.f.by, f.f.name, true)
		if errors.Is(err, syscall.ENOENT) {
			return true, nil
		}
		return w.node != f.f.node, err
	})
}

// Close closes the handle, which drops whatever lock SQLite left on it:
// hooks before the close see the lock still held, hooks after see it
// gone. A file opened for deletion on close is removed after.
func (f *vfsFile) Close() error {
	err := f.f.Close()
	if f.flags&vfs.OPEN_DELETEONCLOSE != 0 && f.f.name != "" {
		if rerr := f.f.by.Remove(f.f.name); rerr != nil && !errors.Is(rerr, fs.ErrNotExist) {
			err = errors.Join(err, rerr)
		}
	}
	return err
}
