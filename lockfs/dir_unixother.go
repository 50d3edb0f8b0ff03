//go:build unix && !linux

package lockfs

import "golang.org/x/sys/unix"

// dirOpenFlags: a directory opened for reading serves the *at calls.
const dirOpenFlags = unix.O_RDONLY

// fileIDAt is FileID of base in the directory fd.
func fileIDAt(fd int, base string) (FileID, error) {
	var st unix.Stat_t
	if err := retryEINTR(func() error { return unix.Fstatat(fd, base, &st, unix.AT_SYMLINK_NOFOLLOW) }); err != nil {
		return FileID{}, err
	}
	return fileIDOfStat(&st), nil
}
