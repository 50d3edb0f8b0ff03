package stamplock

import (
	"errors"
	"io/fs"
)

// ErrLost is matched by Release's error when the file at the lock's path
// is no longer the one this holder created: something reclaimed or replaced
// it while it was held. The replacement is left alone.
var ErrLost = errors.New("stamplock: lock file was replaced while held")

// Release removes the lock file, only while it is still the one this holder
// created and stamped. A file that is gone or replaced is left as it is,
// and Release reports ErrLost. A Release that fails otherwise (the file
// could not be read or removed) may be called again.
func (l *Lock) Release() error {
	ours, err := l.ours()
	if err != nil {
		return err
	}
	// Closed before removing: some systems (windows) refuse to remove an
	// open file.
	if l.file != nil {
		l.file.Close()
		l.file = nil
	}
	if !ours {
		return &fs.PathError{Op: "release", Path: l.path, Err: ErrLost}
	}
	if err := l.fsys.Remove(l.path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}
