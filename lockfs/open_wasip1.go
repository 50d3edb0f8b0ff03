//go:build wasip1

package lockfs

import (
	"os"
	"syscall"
)

// openNoFollow relies on WASI's path_open, which follows a symlink only when
// asked. WASI has no FIFOs to block on.
func openNoFollow(name string) (*os.File, error) {
	return os.OpenFile(name, os.O_RDONLY|syscall.O_NOFOLLOW, 0)
}
