package sqlitelock

import (
	"context"
	"errors"

	"github.com/proclock/proclock/internal/fsx"
	"github.com/proclock/proclock/internal/lockrec"
)

// removeUnopened removes the lock's database after the lock is dropped,
// where removing it while held failed because the file was open
// (fsx.InUse): on windows, where go-sqlite3 opens a database without
// FILE_SHARE_DELETE, so that the holder's own connection keeps its file
// from being removed. Once let go of, the file may be another's: a SQLite
// process's, whose connection keeps it from being removed in turn, or a
// file-mechanism process's, which converted it in place and whose handle,
// as every handle of lockfs's there, shares delete. So it is removed only
// under the guard, under which nobody converts it, and only while the path
// still names it and it holds no stamp (docs/protocol.md, "RemoveOnRelease
// removes P before the mark"). A file that cannot go stays, for its next
// holder; so does every file of a process without an identity, which takes
// no guard (docs/design.md, Known limits).
func (l *Lock) removeUnopened() error {
	if l.guard == nil {
		return nil
	}
	release, err := l.guard(context.Background(), l.at)
	if _, held := errors.AsType[*lockrec.HeldError](err); held {
		return nil // being converted or cleared: not this process's to remove
	}
	if err != nil {
		return err
	}
	defer release()
	seen, err := lockrec.Read(l.fsys, l.at)
	switch {
	case err != nil || !seen.ID.Same(l.id):
		return nil // gone, or another file already
	case seen.Kind != lockrec.SQLite && seen.Kind != lockrec.Empty:
		return nil // stamped since: a file-mechanism process's lock
	}
	if err := removeIfThere(l.fsys, l.at); err != nil && !fsx.InUse(err) {
		return err
	}
	return nil
}
