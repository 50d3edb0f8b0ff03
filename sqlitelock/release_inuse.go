package sqlitelock

import "github.com/proclock/proclock/lockfs"

// removeUnopened removes the lock's database after the lock is dropped,
// where removing it while held failed because the file was open
// (lockfs.InUse): on windows, where go-sqlite3 opens a database without
// FILE_SHARE_DELETE, so that the holder's own connection keeps its file
// from being removed. Removing it later is safe there for the same
// reason: a connection that has the file open, the next holder's or a
// probe's, keeps it from being removed, so a file that goes is one
// nobody holds; one that cannot go stays, for its next holder
// (docs/design.md, Known limits).
func (l *Lock) removeUnopened() error {
	if id, err := l.fsys.FileID(l.path); err != nil || !id.Same(l.id) {
		return nil // gone, or another file already
	}
	if err := removeIfThere(l.fsys, l.path); err != nil && !lockfs.InUse(err) {
		return err
	}
	return nil
}
