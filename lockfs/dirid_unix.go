//go:build unix

package lockfs

import (
	"io/fs"
	"syscall"

	"github.com/proclock/proclock/internal/fserr"
	"golang.org/x/sys/unix"
)

// DirID is one stat(2), which follows symlinks.
func (osFS) DirID(dir string) (FileID, error) {
	if err := fserr.CheckPath("stat", dir); err != nil {
		return FileID{}, err
	}
	var st unix.Stat_t
	if err := retryEINTR(func() error { return unix.Stat(dir, &st) }); err != nil {
		return FileID{}, &fs.PathError{Op: "stat", Path: dir, Err: err}
	}
	if st.Mode&unix.S_IFMT != unix.S_IFDIR {
		return FileID{}, &fs.PathError{Op: "stat", Path: dir, Err: syscall.ENOTDIR}
	}
	return FileID{Dev: uint64(st.Dev), Ino: uint64(st.Ino)}, nil
}
