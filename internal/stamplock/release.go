package stamplock

import (
	"bytes"
	"errors"
	"io"
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

// Release removes the lock file, only while it is still the one this
// holder created and holds its stamp: the same inode and, read through the
// file kept open, this holder's bytes (a stamp written over in place, and
// the file converted by another since, is the other's). It looks and
// removes under SQLite's lock on the file, where the FS has byte-range
// locks, so that no convert comes between the two (docs/protocol.md,
// "File release"). A file that is gone or replaced is left as it is, and
// Release reports ErrLost. A file that cannot be removed because another
// process has it open so (fsx.InUse: on windows, a SQLite process,
// probing the lock or attempting it) is given back as the empty database
// instead: a lock nobody holds.
//
// A file with other names (hard links to it) is not removed, which would
// make its names two locks: the empty database is written over the stamp,
// and every name keeps the file, a free lock (docs/protocol.md, "One
// file, many names").
//
// A Release that fails otherwise (the file could not be read or removed)
// may be called again; its stamp is from then on this process's leftover
// (leftHere), which this process may take again.
func (l *Lock) Release() error {
	err := l.release()
	switch {
	case err == nil || errors.Is(err, ErrLost):
		l.dir.Close() // done: only a failure to read or remove is tried again
	default:
		leaveBehind(l.stamp.Nonce)
	}
	return err
}

func (l *Lock) release() error {
	defer l.closeFile()
	locked := l.lockFile()
	ours, links, err := l.stillOurs()
	switch {
	case err != nil:
		return err
	case !ours:
		return &fs.PathError{Op: "release", Path: l.path, Err: ErrLost}
	case links > 1:
		if l.file != nil {
			return rewrite(l.file, lockrec.EmptyDatabase())
		}
		return l.giveBackInUse(nil)
	}
	if !locked {
		// Closed before removing: some systems (windows) refuse to
		// remove an open file.
		l.closeFile()
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

// lockFile takes SQLite's lock on the lock's file, where the FS has
// byte-range locks, for Release: it lasts until the file is closed. A
// convert, through any name of the file, writes only under it
// (lockForWrite), so none comes between Release's look and its removal.
// Not got (a SQLite process about to find the stamp and back off), the
// look still tells.
func (l *Lock) lockFile() bool {
	rl, ok := l.fsys.(lockfs.RangeLocker)
	if !ok || l.file == nil || l.guard {
		return false
	}
	got, err := rl.TryLockRange(l.file, lockrec.SQLitePendingByte, lockrec.SQLiteLockBytes)
	return got && err == nil
}

// stillOurs is owned, for Release: while the file is kept open and the
// path names it, the bytes read through it must be this holder's stamp
// too (a guard's are never written over in place: its inode tells).
// Once the file is closed (a Release tried again), owned compares the
// bytes at the path.
func (l *Lock) stillOurs() (bool, uint64, error) {
	ours, links, err := l.owned()
	if !ours || err != nil || l.guard || l.file == nil || !l.pinned {
		return ours, links, err
	}
	// One read of one byte more than the stamp: this holder's bytes,
	// and nothing after them.
	buf := make([]byte, len(l.content)+1)
	n, err := l.file.ReadAt(buf, 0)
	if err != nil && !errors.Is(err, io.EOF) {
		return false, 0, err
	}
	return bytes.Equal(buf[:n], l.content), links, nil
}

// closeFile closes the lock's file. Its inode number, free from then on,
// may become another file's, so it no longer identifies this one.
func (l *Lock) closeFile() {
	if l.file != nil {
		l.file.Close()
		l.file = nil
	}
	l.pinned = false
}

// giveBackInUse writes the empty database over this holder's stamp, in
// the file at the path that holds it, judged through the handle that
// writes it (docs/protocol.md, "The lock file is judged through the handle
// that writes it"): Release's way out when the file cannot be removed
// (removeErr), or is not to be (other names). A file that no longer holds
// the stamp is left alone.
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
