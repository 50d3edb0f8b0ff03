package stamplock

import (
	"bytes"
	"errors"
	"io/fs"
	"os"

	"github.com/proclock/proclock/internal/fsx"
	"github.com/proclock/proclock/internal/lockrec"
	"github.com/proclock/proclock/lockfs"
)

// ErrLost is matched by Release's error when the file at the lock's path
// is no longer the one this holder created: something reclaimed or replaced
// it while it was held. The replacement is left alone.
var ErrLost = errors.New("stamplock: lock file was replaced while held")

// Release removes the lock file, only while it is still the one this holder
// created and stamped. A file that is gone or replaced is left as it is,
// and Release reports ErrLost. A file that cannot be removed because
// another process has it open so (fsx.InUse: on windows, a SQLite
// process, probing the lock or attempting it) is given back as the empty
// database instead: a lock nobody holds. A Release that fails otherwise
// (the file could not be read or removed) may be called again.
//
// A file with other names (hard links to it) keeps its bytes under them:
// its name at the path is removed first, while the file is still open,
// and then the empty database is written over the stamp through the open
// file, so that no other name keeps this live process's stamp, which
// would hold the lock for as long as it lives (docs/protocol.md, "One
// file, many names").
func (l *Lock) Release() error {
	err := l.release()
	if err == nil || errors.Is(err, ErrLost) {
		l.dir.Close() // done: only a failure to read or remove is tried again
	}
	return err
}

func (l *Lock) release() error {
	ours, links, err := l.owned()
	if err != nil {
		return err
	}
	if ours && links > 1 && l.file != nil {
		return l.releaseLinked()
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
	err = l.dir.Remove(l.base())
	switch {
	case fsx.InUse(err):
		return l.giveBackInUse(err)
	case err != nil && !errors.Is(err, fs.ErrNotExist):
		return err
	}
	return nil
}

// releaseLinked is Release of a file that has other names than the path.
func (l *Lock) releaseLinked() error {
	f := l.file
	err := l.dir.Remove(l.base())
	switch {
	case fsx.InUse(err):
		l.file = nil
		f.Close()
		return l.giveBackInUse(err)
	case err != nil && !errors.Is(err, fs.ErrNotExist):
		return err
	}
	l.file = nil
	// Nobody else writes a live holder's stamp: the file still holds
	// this one's, under its other names.
	err = rewrite(f, lockrec.EmptyDatabase())
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// giveBackInUse writes the empty database over this holder's stamp, in
// the file at the path that holds it, judged through the handle that
// writes it (docs/protocol.md, "The lock file is judged through the handle
// that writes it"): Release's way out when the file cannot be removed
// (removeErr). A file that no longer holds the stamp is left alone.
func (l *Lock) giveBackInUse(removeErr error) error {
	f, err := l.fsys.OpenFile(l.at, os.O_RDWR, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return errors.Join(removeErr, err)
	}
	defer f.Close()
	seen, err := lockrec.Sight(l.fsys, f)
	switch {
	case err != nil:
		return errors.Join(removeErr, err)
	case !bytes.Equal(seen.Content, l.content):
		return nil // not this holder's stamp: someone else's now
	}
	return rewrite(f, lockrec.EmptyDatabase())
}

// File is the lock file this lock stamped, open while the lock is held.
func (l *Lock) File() lockfs.File { return l.file }
