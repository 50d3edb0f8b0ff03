package sqlitelock

import (
	"context"
	"errors"

	"github.com/proclock/proclock/internal/fsx"
	"github.com/proclock/proclock/internal/lockrec"
)

// removeUnopened removes the lock's file after letting go, where it could
// not be removed while open (windows: go-sqlite3 does not share delete).
// It may be another's by then: only under the guard, while the path names
// it and it holds no stamp (docs/protocol.md, "RemoveOnRelease removes P
// before the mark"). Without an identity (no guard) it stays.
func (l *Lock) removeUnopened() error {
	if l.a.Guard == nil {
		return nil
	}
	g, err := l.a.Guard(context.Background(), l.at)
	if _, held := errors.AsType[*lockrec.HeldError](err); held {
		return nil // being converted or cleared: not this process's to remove
	}
	if err != nil {
		return err
	}
	defer g.Release()
	seen, err := lockrec.Read(l.p.FS, l.at)
	if err != nil || !seen.ID.Same(l.id) || (seen.Kind != lockrec.SQLite && seen.Kind != lockrec.Empty) {
		return nil // gone, another file already, or stamped since
	}
	if err := removeIfThere(l.p.FS, l.at); err != nil && !fsx.InUse(err) {
		return err
	}
	return nil
}
