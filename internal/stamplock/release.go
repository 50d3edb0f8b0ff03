package stamplock

import (
	"bytes"
	"errors"
	"io"
	"io/fs"
	"os"
	"sync"

	"github.com/proclock/proclock/internal/fsx"
	"github.com/proclock/proclock/internal/lockrec"
	"github.com/proclock/proclock/lockfs"
	"github.com/proclock/proclock/platform"
)

// ErrLost is matched by Release's error when the path no longer names the
// file this holder stamped; what is there is left alone.
var ErrLost = errors.New("stamplock: lock file was replaced while held")

// Release removes the lock file while it is this holder's, under SQLite's
// lock on it where it can (docs/protocol.md, "File release"); else ErrLost.
// One in use (windows) or with other names is given the empty database. A
// failed Release may be called again; its stamp is left behind (leftHere).
func (l *Lock) Release() error {
	err := l.release()
	if err == nil || errors.Is(err, ErrLost) {
		l.dir.Close() // done: only a failed read or removal is tried again
	} else {
		leftBehind.Store(l.stamp.Nonce, struct{}{})
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
		l.closeFile() // windows refuses to remove an open file
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

// lockFile takes SQLite's lock on the file until it is closed: a convert
// writes only under it. Not got, the look still tells.
func (l *Lock) lockFile() bool {
	rl, ok := l.fsys.(lockfs.RangeLocker)
	if !ok || l.file == nil || l.guard {
		return false
	}
	got, err := rl.TryLockRange(l.file, lockrec.SQLitePendingByte, lockrec.SQLiteLockBytes)
	return got && err == nil
}

// stillOurs is owned, and while the file is open, its bytes read through
// it are this holder's stamp (a guard's are never written over in place).
func (l *Lock) stillOurs() (bool, uint64, error) {
	ours, links, err := l.owned()
	if !ours || err != nil || l.guard || l.file == nil || !l.pinned {
		return ours, links, err
	}
	buf := make([]byte, len(l.content)+1)
	n, err := l.file.ReadAt(buf, 0)
	if err != nil && !errors.Is(err, io.EOF) {
		return false, 0, err
	}
	return bytes.Equal(buf[:n], l.content), links, nil // and nothing after them
}

// closeFile closes the lock's file, whose inode number may then be reused.
func (l *Lock) closeFile() {
	if l.file != nil {
		l.file.Close()
		l.file = nil
	}
	l.pinned = false
}

// giveBackInUse writes the empty database over this holder's stamp at the
// path, judged through that handle, when it cannot (removeErr) be removed.
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
		return nil // someone else's now
	}
	return rewrite(f, lockrec.EmptyDatabase())
}

// File is the lock file this lock stamped, open while the lock is held.
func (l *Lock) File() lockfs.File { return l.file }

// Check reports the cause of the lock's loss (lockrec.Gone), nil while the
// path names this holder's file and stamp. Not concurrently with Release.
func (l *Lock) Check() error {
	if l.file == nil {
		return nil // released
	}
	if l.pinned {
		id, err := l.fsys.FileID(l.at)
		if lost := lockrec.Gone(l.at, err, err == nil && !id.SameOpen(l.id)); lost != nil || err != nil {
			return lost
		}
		// Its bytes are read by the path: the handle may be write-only.
	}
	seen, err := lockrec.Read(l.fsys, l.at)
	// Being written (torn), or a failed read: no proof.
	proof := seen.Kind != lockrec.Torn && (seen.Kind != lockrec.Foreign || seen.Content != nil)
	return lockrec.Gone(l.at, err, err == nil && proof && !bytes.Equal(seen.Content, l.content))
}

// ReasonLeftHere: a stamp of this process whose Release failed: stale to
// this process, held to every other.
const ReasonLeftHere platform.Reason = "left by this process"

// leftBehind holds the nonces of the stamps (of locks and guards) whose
// Release failed in this process: no live Lock relies on them.
var leftBehind sync.Map

// leftHere reports whether stamp is this process's own left behind, which
// it alone judges dead (docs/protocol.md, "File release").
func leftHere(here platform.Identity, stamp *lockrec.Record) bool {
	id := stamp.Identity
	_, left := leftBehind.Load(stamp.Nonce)
	return left && stamp.Format == lockrec.Format && id.PID == here.PID && id.Host == here.Host &&
		id.BootID == here.BootID && id.StartTime == here.StartTime && id.PIDNamespace == here.PIDNamespace
}
