package lockfs

import "golang.org/x/sys/unix"

// dirOpenFlags: O_PATH opens a directory without reading it, and serves
// the *at calls.
const dirOpenFlags = unix.O_PATH

// fileIDAt is FileID of base in the directory fd.
func fileIDAt(fd int, base string) (FileID, error) {
	return statID(fd, base, unix.AT_SYMLINK_NOFOLLOW, func(st *unix.Stat_t) error {
		return unix.Fstatat(fd, base, st, unix.AT_SYMLINK_NOFOLLOW)
	})
}
