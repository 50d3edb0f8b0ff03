//go:build unix

package lockfs

import (
	"errors"
	"io/fs"
	"os"

	"golang.org/x/sys/unix"
)

// openNoFollow lets open(2) refuse a symlink (O_NOFOLLOW) and return at once
// on a FIFO or a device (O_NONBLOCK) without making a terminal ours
// (O_NOCTTY); os.OpenFile adds O_CLOEXEC.
func openNoFollow(name string) (*os.File, error) {
	f, err := openFile(name, os.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_NOCTTY, 0)
	if err != nil {
		return nil, refusedSymlinkAsELOOP(name, err)
	}
	return f, nil
}

// openFile is os.OpenFile for the files of locks, for less: os.OpenFile
// offers every file it opens to the runtime's poller, which costs four
// fcntl calls and a failed epoll_ctl on a regular file, as much again as the
// open itself on tmpfs. os.NewFile only asks whether the descriptor is
// non-blocking.
func openFile(name string, flag int, perm fs.FileMode) (*os.File, error) {
	for {
		fd, err := unix.Open(name, flag|unix.O_CLOEXEC, uint32(perm.Perm()))
		if err == nil {
			return os.NewFile(uintptr(fd), name), nil
		}
		if err != unix.EINTR {
			return nil, &fs.PathError{Op: "open", Path: name, Err: err}
		}
	}
}

// refusedSymlinkAsELOOP gives a refused symlink the ELOOP that Linux, darwin
// and OpenBSD report, where FreeBSD says EMLINK and NetBSD EFTYPE, so callers
// see one error for it everywhere.
func refusedSymlinkAsELOOP(name string, err error) error {
	pe, ok := errors.AsType[*fs.PathError](err)
	if !ok || errors.Is(pe.Err, unix.ELOOP) || errors.Is(pe.Err, unix.ENOENT) {
		return err
	}
	if fi, lerr := os.Lstat(name); lerr == nil && fi.Mode()&fs.ModeSymlink != 0 {
		return &fs.PathError{Op: pe.Op, Path: pe.Path, Err: unix.ELOOP}
	}
	return err
}
