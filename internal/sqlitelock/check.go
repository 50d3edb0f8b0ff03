package sqlitelock

import (
	"io/fs"

	"github.com/proclock/proclock/internal/lockrec"
)

// Check reports whether the lock is still whole, writing nothing: nil
// while the path names the file locked and the mark is this holder's, else
// the cause of its loss. A look that fails proves nothing: nil. It must
// not run concurrently with Release.
func (l *Lock) Check() error {
	if l.released {
		return nil
	}
	id, err := l.p.FS.FileID(l.at)
	if lost := lockrec.Gone(l.at, err, err == nil && !id.SameOpen(l.id)); lost != nil {
		// The mark may be gone with it, unless the directory kept still
		// has the file locked (the path names another directory now).
		if kept, err := l.fileID(); err != nil || !kept.SameOpen(l.id) {
			l.markLost = true
		}
		return lost
	}
	if l.nonce == "" {
		return nil // no mark of its own (never the case of a holder)
	}
	lost := l.checkMark(lockrec.ReadMark(l.p.FS, l.at), lockrec.MarkPath(l.at))
	if lost != nil {
		l.markLost = true // another's, perhaps, by the time of the release
	}
	return lost
}

// checkMark is Check's verdict on the mark m, read at name.
func (l *Lock) checkMark(m lockrec.Mark, name string) error {
	switch {
	case !m.Present:
		return lockrec.Gone(name, fs.ErrNotExist, false)
	case m.Record == nil:
		// Unreadable proves nothing; bytes that are not a record, or
		// what is not a file, replaced it.
		if m.Raw != nil || m.Foreign() {
			return lockrec.Gone(name, nil, true)
		}
		if info, err := l.p.FS.Lstat(name); err == nil && !info.Mode().IsRegular() {
			return lockrec.Gone(name, nil, true)
		}
		return nil
	case m.Record.Nonce != l.nonce:
		return lockrec.Gone(name, nil, true)
	}
	return nil
}
