package lockfs

import (
	"errors"
	"os"
	"time"

	"golang.org/x/sys/windows"
)

// renameTries bounds how often rename tries; the waits double from 1 ms,
// about two seconds in all, as long as cmd/go's robustio waits.
const renameTries = 12

// rename is os.Rename, tried again while the target is open elsewhere:
// replacing a file that another process has open, even sharing delete,
// fails with ERROR_ACCESS_DENIED until it closes it (or, with
// ERROR_SHARING_VIOLATION, while it holds it without sharing), and so does
// replacing a removed file that someone still has open. Readers of a
// .holder file keep it open only while they read it. (cmd/go's robustio
// retries renames for the same reason.)
func rename(oldname, newname string) error {
	wait := time.Millisecond
	for try := 1; ; try++ {
		err := os.Rename(oldname, newname)
		if err == nil || try == renameTries || !openElsewhere(err) {
			return err
		}
		time.Sleep(wait)
		wait *= 2
	}
}

// openElsewhere reports whether err is how windows refuses to change a
// file that another process has open.
func openElsewhere(err error) bool {
	return errors.Is(err, windows.ERROR_ACCESS_DENIED) || errors.Is(err, windows.ERROR_SHARING_VIOLATION)
}

// inUse reports whether err says a file is open in a way that forbids the
// operation: opened without FILE_SHARE_DELETE, as SQLite's own files are.
func inUse(err error) bool { return errors.Is(err, windows.ERROR_SHARING_VIOLATION) }
