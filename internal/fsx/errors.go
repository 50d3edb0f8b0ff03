package fsx

import (
	"errors"
	"syscall"

	"github.com/proclock/proclock/lockfs"
)

// InUse reports whether err, from Remove or Rename, says the file is open
// without FILE_SHARE_DELETE (windows: go-sqlite3's database), or matches
// ErrInUse.
func InUse(err error) bool {
	if err == nil {
		return false
	}
	u, ok := lockfs.OS().(interface{ InUse(error) bool })
	return errors.Is(err, ErrInUse) || (ok && u.InUse(err))
}

// ErrInUse is matched by the error of a Remove or Rename that an FS other
// than lockfs.OS refuses as windows does (package fake).
var ErrInUse = errors.New("file is open and may not be removed or renamed")

// Exhausted reports whether err says this process or the system has run
// out of file descriptors: a failure of the moment, never read as held.
func Exhausted(err error) bool {
	return errors.Is(err, syscall.EMFILE) || errors.Is(err, syscall.ENFILE)
}
