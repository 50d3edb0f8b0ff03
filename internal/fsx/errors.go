package fsx

import (
	"errors"
	"syscall"

	"github.com/proclock/proclock/lockfs"
)

// InUse reports whether err, from Remove or Rename, says the file is open
// in a way that forbids it: on windows, opened without FILE_SHARE_DELETE,
// as go-sqlite3 opens a database (a sharing violation); or an error
// matching ErrInUse, from an FS that stages windows' sharing (package
// fake). Never lockfs.OS's error on other systems, which remove and
// rename open files.
func InUse(err error) bool { return err != nil && (errors.Is(err, ErrInUse) || osInUse(err)) }

// osInUse asks lockfs.OS, which tells its own system's errors (an
// exported method of its unexported type, found as a power is).
func osInUse(err error) bool {
	u, ok := lockfs.OS().(interface{ InUse(error) bool })
	return ok && u.InUse(err)
}

// ErrInUse is matched by the error of a Remove or Rename that an FS other
// than lockfs.OS refuses as windows does for a file open without
// FILE_SHARE_DELETE (InUse).
var ErrInUse = errors.New("file is open and may not be removed or renamed")

// Exhausted reports whether err says that this process or the system has
// run out of file descriptors (EMFILE, ENFILE): a failure of the moment,
// which says nothing of the file it was to open, so a lock never reads it
// as held, as a user's file, or as anything else but this error.
func Exhausted(err error) bool {
	return errors.Is(err, syscall.EMFILE) || errors.Is(err, syscall.ENFILE)
}
