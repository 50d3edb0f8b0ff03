package lockrec

import (
	"errors"
	"fmt"
	"io/fs"

	"github.com/proclock/proclock/lockfs"
)

// ErrRemoved is matched by the cause of a held lock's loss when one of its
// files (the lock file, or a SQLite holder's mark) is no longer at its
// path: removed, renamed away, its directory removed or moved, or its
// filesystem unmounted.
var ErrRemoved = errors.New("removed from its path")

// ErrReplaced is matched by the cause of a held lock's loss when another
// file is at the path of one of its files (renamed or created over it), or
// its bytes are no longer its holder's.
var ErrReplaced = errors.New("replaced at its path")

// Gone is the cause of a loss of the file name: err (what a look at it
// failed with, or nil) wrapped with ErrRemoved when the name no longer
// resolves, with ErrReplaced when replaced is set; nil when neither, the
// file still there as far as can be told. A look that fails otherwise
// (EACCES, EIO) proves nothing: nil.
func Gone(name string, err error, replaced bool) error {
	switch {
	case err != nil && (errors.Is(err, fs.ErrNotExist) || errors.Is(err, lockfs.ErrNotDir)):
		if pe, ok := errors.AsType[*fs.PathError](err); ok {
			err = pe.Err // the name is said once
		}
		return &fs.PathError{Op: "watch", Path: name, Err: fmt.Errorf("%w (%w)", ErrRemoved, err)}
	case err != nil:
		return nil
	case replaced:
		return &fs.PathError{Op: "watch", Path: name, Err: ErrReplaced}
	}
	return nil
}
