//go:build wasip1

package lockfs

import (
	"io/fs"
	"os"
	"syscall"
)

// openNoFollow relies on WASI's path_open, which follows a symlink only when
// asked. WASI has no FIFOs to block on, and package syscall offers no
// O_NONBLOCK here.
func openNoFollow(name string) (*os.File, error) {
	return os.OpenFile(name, os.O_RDONLY|syscall.O_NOFOLLOW, 0)
}

// openFile is os.OpenFile here.
func openFile(name string, flag int, perm fs.FileMode) (*os.File, error) {
	return os.OpenFile(name, flag, perm)
}
