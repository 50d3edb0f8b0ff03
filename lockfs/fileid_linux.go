//go:build linux

package lockfs

import (
	"runtime"
	"time"

	"golang.org/x/sys/unix"
)

// dirOpenFlags: O_PATH needs no permission to read the directory.
const dirOpenFlags = unix.O_PATH

// statxMask asks for what stat(2) tells and the birth time.
const statxMask = unix.STATX_BASIC_STATS | unix.STATX_BTIME

// useStatx is false on Android, whose seccomp policy has killed processes
// with SIGSYS for statx.
var useStatx = runtime.GOOS != "android"

// statAt is lstat(2) of path in the directory fd, through statx, the only
// call that reports birth times.
func statAt(fd int, path string) (lookInfo, FileID, error) {
	return statx(fd, path, unix.AT_SYMLINK_NOFOLLOW, func(st *unix.Stat_t) error {
		return unix.Fstatat(fd, path, st, unix.AT_SYMLINK_NOFOLLOW)
	})
}

// statFd is fstat(2) of fd, its FileInfo named name, through statx.
func statFd(fd int, name string) (lookInfo, FileID, error) {
	info, id, err := statx(fd, "", unix.AT_EMPTY_PATH, func(st *unix.Stat_t) error { return unix.Fstat(fd, st) })
	info.name = name
	return info, id, err
}

// statx falls back to stat where statx is missing: a kernel before 4.11
// (ENOSYS) or a seccomp filter that predates it (EPERM).
func statx(dirfd int, path string, flags int, stat func(*unix.Stat_t) error) (lookInfo, FileID, error) {
	if useStatx {
		var stx unix.Statx_t
		err := retryEINTR(func() error { return unix.Statx(dirfd, path, flags, statxMask, &stx) })
		if err == nil {
			return infoOfStatx(path, &stx), fileIDOfStatx(&stx), nil
		}
		if err != unix.ENOSYS && err != unix.EPERM {
			return lookInfo{}, FileID{}, err
		}
	}
	return statPlain(path, stat)
}

func infoOfStatx(name string, stx *unix.Statx_t) lookInfo {
	return lookInfo{name: name, size: int64(stx.Size), mode: modeOf(uint32(stx.Mode)),
		mtime: time.Unix(stx.Mtime.Sec, int64(stx.Mtime.Nsec))}
}

// fileIDOfStatx takes the birth time only when the filesystem reported one.
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
