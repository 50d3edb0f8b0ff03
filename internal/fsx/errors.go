package fsx

import (
	"errors"
	"syscall"

	"github.com/proclock/proclock/lockfs"
)

// InUse reports whether err, from Remove or Rename, says the file is open
// in a way that forbids it: on windows, opened without FILE_SHARE_DELETE,
// as go-sqlite3 opens a database; or an error matching ErrInUse, from an
// FS that stages windows' sharing (package fake).
func InUse(err error) bool {
	if err == nil {
		return false
	}
	u, ok := lockfs.OS().(interface{ InUse(error) bool })
	return errors.Is(err, ErrInUse) || (ok && u.InUse(err))
}

// ErrInUse is matched by the error of a Remove or Rename that an FS other
// than lockfs.OS refuses as windows does for a file open without
// FILE_SHARE_DELETE.
var ErrInUse = errors.New("file is open and may not be removed or renamed")

// Exhausted reports whether err says this process or the system has run
// out of file descriptors: a failure of the moment, which a lock never
// reads as held, as a user's file, or as anything else.
func Exhausted(err error) bool {
	return errors.Is(err, syscall.EMFILE) || errors.Is(err, syscall.ENFILE)
}
