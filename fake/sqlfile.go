package fake

import (
	"errors"
	"io/fs"
	"syscall"

	"github.com/proclock/proclock/fake/internal/sqlfile"
)

// The fake FS's powers for SQLite's VFS (package fake/fakesql's), which
// opens, locks and reads its files through them: SQLite runs for real
// over the fake FS, its locks kept in each inode's lock table, where they
// belong to open files (descriptions) as OFD locks do and go when the file
// closes (a Kill closes it too, and so does the collector, once a
// connection left unclosed is garbage). Locking never waits: a conflict is
// sqlfile.Busy, SQLite's BUSY, for SQLite's busy handler. The lock calls
// are opLock operations, which hooks see.
var (
	_ sqlfile.FS   = (*actor)(nil)
	_ sqlfile.File = (*file)(nil)
)

// SQLiteOpen opens name for SQLite's VFS (sqlfile.FS).
func (a *actor) SQLiteOpen(name string, flag int, perm fs.FileMode) (sqlfile.File, error) {
	var f *file
	if name == "" {
		f = &file{description: &description{m: a.m, by: a, node: &inode{mode: 0o600}, readable: true, writable: true}}
	} else {
		h, err := a.OpenFile(name, flag, perm)
		if err != nil {
			return nil, err
		}
		f = h.(*file)
		f.m.mu.Lock()
		f.unshared = true // as go-sqlite3 opens on windows
		f.m.mu.Unlock()
	}
	if err := usable(f); err != nil {
		f.m.closeFile(f.description)
		return nil, &fs.PathError{Op: "open", Path: name, Err: err}
	}
	return f, nil
}

// usable refuses what SQLite cannot use: a handle of a process killed
// before the open was done, or a directory, which a read-only open allows.
func usable(f *file) error {
	f.m.mu.Lock()
	defer f.m.mu.Unlock()
	switch {
	case f.by.dead():
		return ErrKilled
	case f.node.isDir():
		return syscall.EISDIR
	}
	return nil
}

// SQLiteStat describes the file at name, following symlinks.
func (a *actor) SQLiteStat(name string) (fs.FileInfo, error) { return a.stat(name) }

// SQLiteLock raises the file's lock to want, as SQLite's xLock: SHARED
// from none, RESERVED from SHARED, EXCLUSIVE from SHARED or more. Many
// SHARED at once; one RESERVED; PENDING lets no new SHARED in; EXCLUSIVE
// only alone. A write lock on a read-only file is refused, as on the OS.
func (f *file) SQLiteLock(want sqlfile.Level) error {
	return f.locking(func(have, strongest sqlfile.Level, others int) error {
		switch {
		case have >= want:
			return nil
		case !validRaise(have, want), want >= sqlfile.Reserved && !f.writable:
			return sqlfile.BadLock
		case want == sqlfile.Shared && strongest >= sqlfile.Pending,
			want == sqlfile.Reserved && strongest >= sqlfile.Reserved,
			want == sqlfile.Exclusive && others > 0:
			if want == sqlfile.Exclusive && have >= sqlfile.Reserved {
				// The writer keeps PENDING, so no new reader comes in while
				// it waits for the old ones to leave. (Only a RESERVED one,
				// as the OS VFS does: the one writer there can be.)
				f.setLevel(sqlfile.Pending)
			}
			return sqlfile.Busy
		}
		f.setLevel(want)
		return nil
	})
}

// validRaise reports whether SQLite may ask to go from have to want.
// PENDING is never asked for: it is where a refused EXCLUSIVE stops.
func validRaise(have, want sqlfile.Level) bool {
	switch want {
	case sqlfile.Shared:
		return have == sqlfile.None
	case sqlfile.Reserved:
		return have == sqlfile.Shared
	case sqlfile.Exclusive:
		return have >= sqlfile.Shared
	}
	return false
}

// SQLiteUnlock lowers the file's lock to SHARED or NONE.
func (f *file) SQLiteUnlock(to sqlfile.Level) error {
	return f.locking(func(have, _ sqlfile.Level, _ int) error {
		if to != sqlfile.None && to != sqlfile.Shared {
			return sqlfile.BadUnlock
		}
		f.setLevel(min(have, to))
		return nil
	})
}

// SQLiteReserved reports whether this file, or another of its inode,
// holds RESERVED or more: whether some connection is about to write.
func (f *file) SQLiteReserved() (reserved bool, err error) {
	err = f.locking(func(have, strongest sqlfile.Level, _ int) error {
		reserved = max(have, strongest) >= sqlfile.Reserved
		return nil
	})
	return reserved, err
}

// locking runs body on the lock table, as an opLock operation, with the
// file's level, the strongest level the other files of its inode hold and
// how many of them hold one.
func (f *file) locking(body func(have, strongest sqlfile.Level, others int) error) error {
	return doErr(f, opLock, "lock", func() error {
		var strongest sqlfile.Level
		others := 0
		for g, level := range f.node.locks {
			if g != f.description {
				strongest = max(strongest, level)
				others++
			}
		}
		return body(f.node.locks[f.description], strongest, others)
	})
}

// setLevel puts the file's lock at level; memfs.mu is held.
func (f *file) setLevel(level sqlfile.Level) {
	n := f.node
	if level == sqlfile.None {
		n.unlock(f.description)
		return
	}
	if n.locks == nil {
		n.locks = make(map[*description]sqlfile.Level)
	}
	if level < n.locks[f.description] {
		n.letGo()
	}
	n.locks[f.description] = level
}

// SQLiteLockState is the level of the lock this file holds.
func (f *file) SQLiteLockState() sqlfile.Level {
	f.m.mu.Lock()
	defer f.m.mu.Unlock()
	return f.node.locks[f.description]
}

// SQLiteHasMoved reports whether the file's name now names another file,
// or nothing: a database renamed, removed or swapped while open.
func (f *file) SQLiteHasMoved() (bool, error) {
	return run(f.by, step{op: opStat, verb: "stat", path: f.name}, func() (bool, error) {
		w, err := f.m.resolve(f.by, f.name, true)
		if errors.Is(err, syscall.ENOENT) {
			return true, nil
		}
		return w.node != f.node, err
	})
}
