package stamplock

import (
	"bytes"

	"github.com/proclock/proclock/internal/lockrec"
)

// Check reports whether the lock is still whole, writing nothing: nil
// while the path names the file this holder created and the file holds its
// stamp; else the cause of its loss, matching lockrec.ErrRemoved (the file
// is no longer at the path) or lockrec.ErrReplaced (another file is, or
// the bytes are no longer this holder's stamp: someone wrote over it). A
// look that fails for another reason (permission denied, I/O) proves
// nothing, and gives nil. It must not run concurrently with Release.
func (l *Lock) Check() error {
	if l.file == nil {
		return nil // released
	}
	if l.pinned {
		id, err := l.fsys.FileID(l.at)
		if lost := lockrec.Gone(l.at, err, err == nil && !id.SameOpen(l.id)); lost != nil || err != nil {
			return lost
		}
		// The path names the file kept open: its bytes, which every
		// other process judges the lock by, are read by the path (the
		// handle may be write-only).
	}
	seen, err := lockrec.Read(l.fsys, l.at)
	if err != nil {
		return lockrec.Gone(l.at, err, false)
	}
	switch {
	case seen.Kind == lockrec.Torn, seen.Kind == lockrec.Foreign && seen.Content == nil:
		// Being written (a later look sees how it ends), or a read
		// that failed: no proof.
		return nil
	case !bytes.Equal(seen.Content, l.content):
		return lockrec.Gone(l.at, nil, true)
	}
	return nil
}
