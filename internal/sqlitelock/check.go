package sqlitelock

import (
	"io/fs"

	"github.com/proclock/proclock/internal/lockrec"
)

// Check reports whether the lock is still whole, writing nothing: nil
// while the path names the file this holder locked and the mark is its
// own; else the cause of its loss, matching lockrec.ErrRemoved or
// lockrec.ErrReplaced, naming the file (the lock file, or its mark). A
// look that fails for another reason (permission denied, I/O) proves
// nothing, and gives nil. It must not run concurrently with Release.
//
// The lock file removed alone leaves the lock held against everyone by
// the mark, for as long as this holder lives (docs/protocol.md, "A held
// lock's files removed"); it is reported all the same: its holder no
// longer has the file the protocol says it holds.
func (l *Lock) Check() error {
	if l.released {
		return nil
	}
	id, err := l.fsys.FileID(l.at)
	if lost := lockrec.Gone(l.at, err, err == nil && !id.SameOpen(l.id)); lost != nil {
		// The mark may be gone with it, and another's by the release,
		// unless the directory kept still has the file locked: the path
		// names another directory (a symlink in it flipped, a directory
		// renamed), and the mark beside the file locked is still ours.
		if kept, err := l.fileID(); err != nil || !kept.SameOpen(l.id) {
			l.markLost = true
		}
		return lost
	}
	if l.nonce == "" {
		return nil // no mark of its own (never the case of a holder)
	}
	m := lockrec.ReadMark(l.fsys, l.at)
	name := lockrec.MarkPath(l.at)
	lost := l.checkMark(m, name)
	if lost != nil {
		// Another's, perhaps, by the time of the release.
		l.markLost = true
	}

	return lost
}

// checkMark is Check's verdict on the mark m, read at name.
func (l *Lock) checkMark(m lockrec.Mark, name string) error {
	switch {
	case !m.Present:
		return lockrec.Gone(name, fs.ErrNotExist, false)
	case m.Record == nil:
		// Unreadable (as a name this process may no longer read: no
		// proof) or not a record: replaced, when it has bytes or is
		// not a file.
		if m.Raw != nil || m.Foreign() {
			return lockrec.Gone(name, nil, true)
		}
		if info, err := l.fsys.Lstat(name); err == nil && !info.Mode().IsRegular() {
			return lockrec.Gone(name, nil, true) // a symlink, say
		}
		return nil
	case m.Record.Nonce != l.nonce:
		return lockrec.Gone(name, nil, true)
	}
	return nil
}
