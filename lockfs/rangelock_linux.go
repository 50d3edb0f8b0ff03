package lockfs

import (
	"io/fs"
	"os"

	"github.com/proclock/proclock/internal/fserr"
	"golang.org/x/sys/unix"
)

// OpenLockable opens name read-write for TryLockRange (RangeLocker), as
// an *os.File, never following a symlink: the lock's one open file, which
// the lock keeps until Release and `proclock run` hands to COMMAND as its
// descriptor 3 (docs/command.md).
func (osFS) OpenLockable(name string) (File, error) {
	if err := fserr.CheckPath("open", name); err != nil {
		return nil, err
	}
	f, err := openFile(name, os.O_RDWR|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_NOCTTY, 0)
	if err != nil {
		return nil, refusedSymlinkAsELOOP(name, err)
	}
	return f, nil
}

// TryLockRange takes an OFD write lock on [off, off+n) of f without
// waiting (RangeLocker).
func (osFS) TryLockRange(f File, off, n int64) (bool, error) {
	lk := unix.Flock_t{Type: unix.F_WRLCK, Whence: 0, Start: off, Len: n}
	err := ofd(f, unix.F_OFD_SETLK, &lk)
	switch err {
	case nil:
		return true, nil
	case unix.EAGAIN, unix.EACCES:
		return false, nil
	}
	return false, pathError("lock", f, err)
}

// LockRange waits for an OFD write lock on [off, off+n) of f in the
// kernel's queue (RangeLocker).
func (osFS) LockRange(f File, off, n int64) error {
	lk := unix.Flock_t{Type: unix.F_WRLCK, Whence: 0, Start: off, Len: n}
	if err := ofd(f, unix.F_OFD_SETLKW, &lk); err != nil {
		return pathError("lock", f, err)
	}
	return nil
}

// RangeWriteLocked asks the kernel which lock would keep a read lock on
// [off, off+n) of f out: only another's write lock does (RangeLocker).
func (osFS) RangeWriteLocked(f File, off, n int64) (bool, error) {
	lk := unix.Flock_t{Type: unix.F_RDLCK, Whence: 0, Start: off, Len: n}
	if err := ofd(f, unix.F_OFD_GETLK, &lk); err != nil {
		return false, pathError("getlk", f, err)
	}
	return lk.Type != unix.F_UNLCK, nil
}

// ofd runs one OFD lock command on f's descriptor.
func ofd(f File, cmd int, lk *unix.Flock_t) error {
	if f == nil {
		return fs.ErrInvalid
	}
	return controlFd(f, func(fd uintptr) error {
		for {
			if err := unix.FcntlFlock(fd, cmd, lk); err != unix.EINTR {
				return err
			}
		}
	})
}

func pathError(op string, f File, err error) error {
	if pe, ok := err.(*fs.PathError); ok {
		return pe
	}
	name := ""
	if f != nil {
		name = f.Name()
	}
	return &fs.PathError{Op: op, Path: name, Err: err}
}
