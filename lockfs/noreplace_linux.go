package lockfs

import (
	"os"

	"github.com/proclock/proclock/internal/fserr"
	"golang.org/x/sys/unix"
)

// RenameNoReplace is renameat2(2) with RENAME_NOREPLACE
// (internal/fsx's NoReplaceRenamer).
func (osFS) RenameNoReplace(oldname, newname string) error {
	if err := checkPaths("rename", oldname, newname); err != nil {
		return err
	}
	err := retryEINTR(func() error {
		return unix.Renameat2(unix.AT_FDCWD, oldname, unix.AT_FDCWD, newname, unix.RENAME_NOREPLACE)
	})
	switch err {
	case nil:
		return nil
	case unix.EINVAL, unix.ENOSYS, unix.EPERM, unix.ENOTSUP:
		// A filesystem without the flag, a kernel before 3.15, a seccomp
		// filter that predates the call (a true EPERM meets the
		// fallback's own call again).
		err = fserr.NoReplaceUnsupported(err)
	}
	return &os.LinkError{Op: "rename", Old: oldname, New: newname, Err: err}
}
