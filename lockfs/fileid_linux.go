//go:build linux

package lockfs

import (
	"errors"
	"io/fs"
	"os"
	"runtime"
	"time"

	"golang.org/x/sys/unix"
)

// statxMask asks for the inode number, the birth time and the link count;
// the device comes with every statx answer.
const statxMask = unix.STATX_INO | unix.STATX_BTIME | unix.STATX_NLINK

func fileIDByName(name string) (FileID, error) {
	return statID(unix.AT_FDCWD, name, unix.AT_SYMLINK_NOFOLLOW, func(st *unix.Stat_t) error {
		return unix.Lstat(name, st)
	})
}

func fileIDOfOS(f *os.File) (FileID, error) {
	var id FileID
	err := withFd(f, func(fd uintptr) (err error) {
		id, err = statID(int(fd), "", unix.AT_EMPTY_PATH, func(st *unix.Stat_t) error {
			return unix.Fstat(int(fd), st)
		})
		return err
	})
	return id, err
}

// statID asks statx, the only Linux call that reports birth times, and
// falls back to stat, without birth, where statx is missing.
func statID(dirfd int, path string, flags int, stat func(*unix.Stat_t) error) (FileID, error) {
	if useStatx {
		var stx unix.Statx_t
		err := retryEINTR(func() error { return unix.Statx(dirfd, path, flags, statxMask, &stx) })
		if err == nil {
			return fileIDOfStatx(&stx), nil
		}
		if !statxMissing(err) {
			return FileID{}, err
		}
	}
	var st unix.Stat_t
	if err := retryEINTR(func() error { return stat(&st) }); err != nil {
		return FileID{}, err
	}
	return FileID{Dev: uint64(st.Dev), Ino: st.Ino, Links: uint64(st.Nlink)}, nil
}

// useStatx is false on Android, whose seccomp policy has killed processes
// with SIGSYS for statx instead of failing it with ENOSYS. Tests turn it off
// to check the fallback.
var useStatx = runtime.GOOS != "android"

// statxMissing tells a kernel older than 4.11 (ENOSYS) or a container whose
// seccomp filter predates statx (EPERM) from a real failure.
func statxMissing(err error) bool {
	return errors.Is(err, unix.ENOSYS) || errors.Is(err, unix.EPERM)
}

// fileIDOfStatx takes the birth time only when the filesystem reported one:
// the field is zero, not absent, when it did not.
func fileIDOfStatx(stx *unix.Statx_t) FileID {
	id := FileID{Dev: unix.Mkdev(stx.Dev_major, stx.Dev_minor), Ino: stx.Ino}
	if stx.Mask&unix.STATX_NLINK != 0 {
		id.Links = uint64(stx.Nlink)
	}
	if stx.Mask&unix.STATX_BTIME != 0 {
		id.Birth = time.Unix(stx.Btime.Sec, int64(stx.Btime.Nsec))
		id.HasBirth = true
	}
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

// statIDFd is fstat and the file's identity of fd, in one statx where
// there is one.
func statIDFd(fd int, name string) (fs.FileInfo, FileID, error) {
	if useStatx {
		var stx unix.Statx_t
		err := unix.Statx(fd, "", unix.AT_EMPTY_PATH, unix.STATX_BASIC_STATS|unix.STATX_BTIME, &stx)
		if err == nil {
			info := &lookInfo{name: name, size: int64(stx.Size), mode: modeOf(uint32(stx.Mode)),
				mtime: time.Unix(stx.Mtime.Sec, int64(stx.Mtime.Nsec))}
			return info, fileIDOfStatx(&stx), nil
		}
		if !statxMissing(err) {
			return nil, FileID{}, err
		}
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return nil, FileID{}, err
	}
	return infoOfStat(name, &st), FileID{Dev: uint64(st.Dev), Ino: st.Ino, Links: uint64(st.Nlink)}, nil
}
