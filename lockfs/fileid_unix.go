//go:build unix && !linux

package lockfs

import (
	"errors"
	"io/fs"
	"os"

	"golang.org/x/sys/unix"
)

func fileIDByName(name string) (FileID, error) {
	var st unix.Stat_t
	if err := retryEINTR(func() error { return unix.Lstat(name, &st) }); err != nil {
		return FileID{}, err
	}
	return fileIDOfStat(&st), nil
}

func fileIDOfOS(f *os.File) (FileID, error) {
	var st unix.Stat_t
	err := withFd(f, func(fd uintptr) error {
		return retryEINTR(func() error { return unix.Fstat(int(fd), &st) })
	})
	if err != nil {
		return FileID{}, err
	}
	return fileIDOfStat(&st), nil
}

// fileIDOfStat converts the device number through uint64 whatever its type
// on this system; it only has to be the same for every call.
func fileIDOfStat(st *unix.Stat_t) FileID {
	id := FileID{Dev: uint64(st.Dev), Ino: uint64(st.Ino), Links: uint64(st.Nlink)}
	id.Birth, id.HasBirth = birthOf(st)
	return id
}

// retryEINTR repeats a call interrupted by a signal, as package os does for
// its own stat calls.
func retryEINTR(call func() error) error {
	for {
		err := call()
		if !errors.Is(err, unix.EINTR) {
			return err
		}
	}
}

// statIDFd is fstat and the file's identity of fd, from one fstat.
func statIDFd(fd int, name string) (fs.FileInfo, FileID, error) {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return nil, FileID{}, err
	}
	return infoOfStat(name, &st), fileIDOfStat(&st), nil
}
