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
// and Release reports ErrLost.
func (l *Lock) Release() error {
	seen, readable, err := read(l.fsys, l.path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return &fs.PathError{Op: "release", Path: l.path, Err: ErrLost}
	case err != nil:
		return err
	case !readable || !l.owns(seen):
		return &fs.PathError{Op: "release", Path: l.path, Err: ErrLost}
	}
	return l.fsys.Remove(l.path)
}

// removeIfOurs removes the lock file after a failed stamp, if the file at
// path is still the one created.
func (l *Lock) removeIfOurs() {
	if id, err := l.fsys.FileID(l.path); err == nil && l.id.Ino != 0 && id.Same(l.id) {
		l.fsys.Remove(l.path)
	}
}
