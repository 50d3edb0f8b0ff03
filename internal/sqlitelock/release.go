package sqlitelock

import (
	"errors"
	"io/fs"

	"github.com/proclock/proclock/internal/fsx"
	"github.com/proclock/proclock/lockfs"
)

// Release lets go of the lock, while still holding it: with
// RemoveOnRelease it first removes the database file, if it is still the
// one locked, then its mark (in that order: a file-mechanism process that
// found the file without a mark could convert it just before the removal),
// and then it lets go of the flock(2) lock and of SQLite's (closing the
// pinned file, or the connection's database). Calling it again does
// nothing.
func (l *Lock) Release() error {
	if l.released {
		return nil
	}
	l.released = true
	var errs []error
	inUse := false
	if l.remove {
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
		if fl, ok := l.fsys.(fsx.Flocker); ok && l.flocked {
			// Before SQLite's lock: a proclock process that takes
			// SQLite's lock next finds the flock(2) lock gone, not
			// ours. (Closing the file drops SQLite's byte-range locks
			// on it first.)
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
			err = errors.Join(&panicError{value: r}, closeConn(conn))
		}
	}()
	if conn.InTransaction() {
		if err := exec(conn, "ROLLBACK"); err != nil {
			return errors.Join(err, closeConn(conn))
		}
	}
	if l.attached {
		if err := exec(conn, "DETACH "+schema); err != nil {
			return closeConn(conn)
		}
	}
	l.conns.Put(conn)
	return nil
}

// unattach detaches the lock's database from the connection, which lets
// go of any lock on it, and keeps the connection for another try.
func (l *Lock) unattach() error {
	if err := exec(l.conn, "DETACH "+schema); err != nil {
		return err
	}
	l.attached = false
	return nil
}

// sharedOnly tells whether the connection holds no more than a shared lock
// on the lock's database: not yet the reserved or pending lock of a BEGIN
// EXCLUSIVE that is waiting for readers to go, which may wait. A VFS that
// cannot tell counts as shared only.
func (l *Lock) sharedOnly() bool {
	return !l.conn.Reserved(schema)
}

func removeIfThere(fsys interface{ Remove(string) error }, name string) error {
	if err := fsys.Remove(name); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

// KernelFile is the pinned file that holds the lock's kernel locks (the
// flock(2) lock, and SQLite's byte-range locks where they are taken
// without a connection), while the lock is held; nil when none is on it.
// A process that inherits a descriptor of it holds those locks as long as
// it keeps it open, after this one is gone (flock(1)'s way).
func (l *Lock) KernelFile() lockfs.File {
	if l.released || (!l.flocked && l.ranged == nil) {
		return nil
	}
	return l.kept
}
