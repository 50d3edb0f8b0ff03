package lockfs

import (
	"errors"
	"os"
	"time"

	"golang.org/x/sys/windows"
)

// renameTries bounds rename's tries: the waits double from 1 ms, about two
// seconds in all, as cmd/go's robustio waits.
const renameTries = 12

// rename is os.Rename, tried again while the target is open elsewhere:
// replacing it fails until the other closes it, as a .holder's reader
// soon does.
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
// file another process has open.
func openElsewhere(err error) bool {
	return errors.Is(err, windows.ERROR_ACCESS_DENIED) || errors.Is(err, windows.ERROR_SHARING_VIOLATION)
}

// inUse reports whether err says a file is open without
// FILE_SHARE_DELETE, as SQLite's own files are.
func inUse(err error) bool { return errors.Is(err, windows.ERROR_SHARING_VIOLATION) }
