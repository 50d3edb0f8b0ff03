package sqlitelock

import (
	"context"
	"errors"

	"github.com/proclock/proclock/internal/fsx"
	"github.com/proclock/proclock/internal/lockrec"
)

// removeUnopened removes the lock's database after the lock is dropped,
// where removing it while held failed because it was open (windows:
// go-sqlite3 opens without FILE_SHARE_DELETE). Once let go of, the file
// may be another's, so it is removed only under the guard, while the path
// still names it and it holds no stamp (docs/protocol.md, "RemoveOnRelease
// removes P before the mark"). Without an identity (no guard) it stays.
func (l *Lock) removeUnopened() error {
	if l.a.Guard == nil {
		return nil
	}
	release, err := l.a.Guard(context.Background(), l.at)
	if _, held := errors.AsType[*lockrec.HeldError](err); held {
		return nil // being converted or cleared: not this process's to remove
	}
	if err != nil {
		return err
	}
	defer release()
	seen, err := lockrec.Read(l.p.FS, l.at)
	if err != nil || !seen.ID.Same(l.id) || (seen.Kind != lockrec.SQLite && seen.Kind != lockrec.Empty) {
		return nil // gone, another file already, or stamped since
	}
	if err := removeIfThere(l.p.FS, l.at); err != nil && !fsx.InUse(err) {
		return err
	}
	return nil
}
