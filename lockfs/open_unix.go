//go:build unix

package lockfs

import (
	"errors"
	"io/fs"
	"os"

	"golang.org/x/sys/unix"
)

// noFollow makes open(2) refuse a symlink, return at once on a FIFO or a
// device, and never make a terminal ours.
const noFollow = unix.O_NOFOLLOW | unix.O_NONBLOCK | unix.O_NOCTTY

func openNoFollow(name string) (*os.File, error) { return openUnfollowed(name, os.O_RDONLY) }

// openUnfollowed opens name with mode (O_RDONLY or O_RDWR) and noFollow.
func openUnfollowed(name string, mode int) (*os.File, error) {
	f, err := openFile(name, mode|noFollow, 0)
	if err != nil {
		return nil, refusedSymlinkAsELOOP(name, err)
	}
	return f, nil
}

// openFile is os.OpenFile for less: os.OpenFile offers every file to the
// runtime's poller, four fcntl calls and a failed epoll_ctl on a regular
// file; os.NewFile only asks whether the descriptor is non-blocking.
func openFile(name string, flag int, perm fs.FileMode) (*os.File, error) {
	fd, err := sysOpen(name, flag, uint32(perm.Perm()))
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: name, Err: err}
	}
	return os.NewFile(uintptr(fd), name), nil
}

// refusedSymlinkAsELOOP gives a refused symlink the ELOOP that linux, darwin
// and OpenBSD report, where FreeBSD says EMLINK and NetBSD EFTYPE.
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
