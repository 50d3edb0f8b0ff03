package sqlitelock

import (
	"errors"
	"io/fs"

	"github.com/proclock/proclock/internal/fsx"
	"github.com/proclock/proclock/lockfs"
)

// Release lets go of the lock, once. Still holding it, it removes the file
// (RemoveOnRelease) before the mark, else a file-mechanism process could
// convert the file unmarked just before its removal; then the flock(2)
// lock goes, and SQLite's.
func (l *Lock) Release() error {
	if l.released {
		return nil
	}
	l.released = true
	var errs []error
	inUse := false
	if l.a.RemoveOnRelease {
		// A file with other names stays: removing one would make them
		// two locks (docs/protocol.md, "One file, many names").
		if id, err := l.fileID(); err == nil && id.SameOpen(l.id) && id.Links <= 1 {
			err := l.removeName(l.path)
			if inUse = fsx.InUse(err); !inUse {
				errs = append(errs, err)
			}
		}
	}
	errs = append(errs, l.unmark())
	if l.kept != nil {
		// The flock(2) lock goes first: whoever takes SQLite's next
		// finds it gone.
		if fl, ok := l.p.FS.(fsx.Flocker); ok && l.flocked {
			errs = append(errs, fl.Unflock(l.kept))
		}
		errs = append(errs, l.kept.Close())
		l.kept = nil
	}
	errs = append(errs, l.detach())
	if inUse {
		errs = append(errs, l.removeUnopened())
	}
	errs = append(errs, l.dir.Close())
	return errors.Join(errs...)
}

// detach drops the lock and gives the connection back; a connection that
// cannot be cleaned is closed instead, which drops the lock too.
func (l *Lock) detach() (err error) {
	conn := l.conn
	l.conn = nil
	if conn == nil {
		return nil // SQLite's lock is the pinned file's (l.ranged)
	}
	if l.broken {
		return closeConn(conn)
	}
	defer func() {
		if r := recover(); r != nil { // from InTransaction
			err = errors.Join(panicked(r), closeConn(conn))
		}
	}()
	if conn.InTransaction() {
		if err := exec(conn, "ROLLBACK"); err != nil {
			return errors.Join(err, closeConn(conn))
		}
	}
	if l.attached && exec(conn, "DETACH "+schema) != nil {
		return closeConn(conn)
	}
	l.a.Conns.Put(conn)
	return nil
}

func removeIfThere(fsys interface{ Remove(string) error }, name string) error {
	if err := fsys.Remove(name); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

// KernelFile is the pinned file that holds the lock's kernel locks while
// it is held; nil when none is on it.
func (l *Lock) KernelFile() lockfs.File { return l.kept }
