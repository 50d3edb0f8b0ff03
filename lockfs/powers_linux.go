package lockfs

import (
	"errors"
	"io/fs"
	"os"

	"github.com/proclock/proclock/internal/fserr"
	"golang.org/x/sys/unix"
)

// TryFlock takes a flock(2) lock on f without waiting (fsx.Flocker).
func (osFS) TryFlock(f File, exclusive bool) (bool, error) {
	how := unix.LOCK_SH | unix.LOCK_NB
	if exclusive {
		how = unix.LOCK_EX | unix.LOCK_NB
	}
	switch err := flock(f, how); {
	case err == nil:
		return true, nil
	case errors.Is(err, unix.EWOULDBLOCK):
		return false, nil
	default:
		return false, err
	}
}

// Unflock lets go of f's flock(2) lock (fsx.Flocker).
func (osFS) Unflock(f File) error { return flock(f, unix.LOCK_UN) }

func flock(f File, how int) error {
	return fdCall(f, "flock", func(fd int) error { return unix.Flock(fd, how) })
}

// OpenLockable opens name read-write (RangeLocker), as an *os.File, which
// `proclock run` hands to COMMAND (docs/command.md).
func (osFS) OpenLockable(name string) (File, error) {
	if err := fserr.CheckPath("open", name); err != nil {
		return nil, err
	}
	return asFile(openUnfollowed(name, os.O_RDWR))
}

// TryLockRange takes an OFD write lock on [off, off+n) of f without
// waiting (RangeLocker).
func (osFS) TryLockRange(f File, off, n int64) (bool, error) {
	lk := unix.Flock_t{Type: unix.F_WRLCK, Start: off, Len: n}
	switch err := fdCall(f, "lock", func(fd int) error { return unix.FcntlFlock(uintptr(fd), unix.F_OFD_SETLK, &lk) }); {
	case err == nil:
		return true, nil
	case errors.Is(err, unix.EAGAIN), errors.Is(err, unix.EACCES):
		return false, nil
	default:
		return false, err
	}
}

// LockRange waits for an OFD write lock on [off, off+n) of f in the
// kernel's queue (RangeLocker).
func (osFS) LockRange(f File, off, n int64) error {
	lk := unix.Flock_t{Type: unix.F_WRLCK, Start: off, Len: n}
	return fdCall(f, "lock", func(fd int) error { return unix.FcntlFlock(uintptr(fd), unix.F_OFD_SETLKW, &lk) })
}

// RangeWriteLocked asks the kernel which lock would keep a read lock on
// [off, off+n) of f out (RangeLocker).
func (osFS) RangeWriteLocked(f File, off, n int64) (bool, error) {
	lk := unix.Flock_t{Type: unix.F_RDLCK, Start: off, Len: n}
	err := fdCall(f, "getlk", func(fd int) error { return unix.FcntlFlock(uintptr(fd), unix.F_OFD_GETLK, &lk) })
	return err == nil && lk.Type != unix.F_UNLCK, err
}

// RenameNoReplace is renameat2(2) with RENAME_NOREPLACE
// (internal/fsx's NoReplaceRenamer).
func (osFS) RenameNoReplace(oldname, newname string) error {
	if err := checkPaths("rename", oldname, newname); err != nil {
		return err
	}
	err := retryEINTR(func() error {
		return unix.Renameat2(unix.AT_FDCWD, oldname, unix.AT_FDCWD, newname, unix.RENAME_NOREPLACE)
	})
	switch err {
	case nil:
		return nil
	case unix.EINVAL, unix.ENOSYS, unix.EPERM, unix.ENOTSUP:
		// A filesystem without the flag, a kernel before 3.15, a seccomp
		// filter that predates the call (a true EPERM meets the
		// fallback's own call again).
		err = fserr.NoReplaceUnsupported(err)
	}
	return &os.LinkError{Op: "rename", Old: oldname, New: newname, Err: err}
}

// fdCall runs fn on the descriptor of f, a File of OS, again when
// interrupted; any other File is fs.ErrInvalid.
func fdCall(f File, op string, fn func(fd int) error) error {
	call := func(fd uintptr) error { return retryEINTR(func() error { return fn(int(fd)) }) }
	var err error = fs.ErrInvalid
	name := ""
	switch f := f.(type) {
	case *os.File:
		if f != nil {
			name, err = f.Name(), withFd(f, call)
		}
	case *lookFile:
		return f.use(op, f.name, fn)
	case File:
		name = f.Name()
	}
	if err != nil {
		return &fs.PathError{Op: op, Path: name, Err: err}
	}
	return nil
}
