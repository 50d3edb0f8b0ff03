//go:build unix && !linux

package lockfs

import "golang.org/x/sys/unix"

// dirOpenFlags: a directory opened for reading serves the *at calls.
const dirOpenFlags = unix.O_RDONLY

// statAt is lstat(2) of path relative to the directory fd.
func statAt(fd int, path string) (lookInfo, FileID, error) {
	return statPlain(path, func(st *unix.Stat_t) error { return unix.Fstatat(fd, path, st, unix.AT_SYMLINK_NOFOLLOW) })
}

// statFd is fstat(2) of fd, its FileInfo named name.
func statFd(fd int, name string) (lookInfo, FileID, error) {
	return statPlain(name, func(st *unix.Stat_t) error { return unix.Fstat(fd, st) })
}
