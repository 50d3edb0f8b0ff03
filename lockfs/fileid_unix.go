//go:build unix

package lockfs

import (
	"os"
	"time"

	"golang.org/x/sys/unix"
)

func fileIDByName(name string) (FileID, error) { return fileIDAt(unix.AT_FDCWD, name) }

// fileIDAt is FileID of path, relative to the directory fd.
func fileIDAt(fd int, path string) (FileID, error) {
	_, id, err := statAt(fd, path)
	return id, err
}

func fileIDOfOS(f *os.File) (FileID, error) {
	var id FileID
	err := withFd(f, func(fd uintptr) (err error) {
		_, id, err = statFd(int(fd), "")
		return err
	})
	return id, err
}

// statPlain is stat(2)'s answer as a FileInfo named name and a FileID.
func statPlain(name string, stat func(*unix.Stat_t) error) (lookInfo, FileID, error) {
	var st unix.Stat_t
	if err := retryEINTR(func() error { return stat(&st) }); err != nil {
		return lookInfo{}, FileID{}, err
	}
	sec, nsec := st.Mtim.Unix()
	info := lookInfo{name: name, size: st.Size, mode: modeOf(uint32(st.Mode)), mtime: time.Unix(sec, nsec)}
	id := FileID{Dev: uint64(st.Dev), Ino: uint64(st.Ino), Links: uint64(st.Nlink)}
	id.Birth, id.HasBirth = birthOf(&st)
	return info, id, nil
}

// retryEINTR repeats a call interrupted by a signal, as package os does.
func retryEINTR(call func() error) error {
	for {
		if err := call(); err != unix.EINTR {
			return err
		}
	}
}

// sysOpen is open(2) with O_CLOEXEC, retried when interrupted.
func sysOpen(name string, flag int, perm uint32) (fd int, err error) {
	err = retryEINTR(func() (err error) {
		fd, err = unix.Open(name, flag|unix.O_CLOEXEC, perm)
		return err
	})
	return fd, err
}
