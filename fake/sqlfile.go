package fake

import (
	"errors"
	"io/fs"
	"syscall"

	"github.com/proclock/proclock/fake/internal/sqlfile"
)

// The fake FS's powers for fakesql's VFS: SQLite's locks in each inode's
// lock table, belonging to open files and gone when they close. Locking
// never waits: a conflict is sqlfile.Busy, for SQLite's busy handler.
var (
	_ sqlfile.FS   = (*actor)(nil)
	_ sqlfile.File = (*file)(nil)
)

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

// usable refuses a handle of a process killed meanwhile, or a directory.
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

func (a *actor) SQLiteStat(name string) (fs.FileInfo, error) { return a.stat("stat", name, true) }

// SQLiteLock is SQLite's xLock: many SHARED at once; one RESERVED;
// PENDING lets no new SHARED in; EXCLUSIVE only alone. SQLite asks only
// for the raises os_unix.c allows, and unlocks to SHARED or NONE.
func (f *file) SQLiteLock(want sqlfile.Level) error {
	return f.locking(func(have, strongest sqlfile.Level, others int) error {
		switch {
		case have >= want:
			return nil
		case want >= sqlfile.Reserved && !f.writable:
			return sqlfile.BadLock
		case want == sqlfile.Shared && strongest >= sqlfile.Pending,
			want == sqlfile.Reserved && strongest >= sqlfile.Reserved,
			want == sqlfile.Exclusive && others > 0:
			if want == sqlfile.Exclusive && have >= sqlfile.Reserved {
				f.setLevel(sqlfile.Pending) // no new reader comes in meanwhile
			}
			return sqlfile.Busy
		}
		f.setLevel(want)
		return nil
	})
}

func (f *file) SQLiteUnlock(to sqlfile.Level) error {
	return f.locking(func(have, _ sqlfile.Level, _ int) error {
		f.setLevel(min(have, to))
		return nil
	})
}

func (f *file) CheckReservedLock() (reserved bool, err error) {
	err = f.locking(func(have, strongest sqlfile.Level, _ int) error {
		reserved = max(have, strongest) >= sqlfile.Reserved
		return nil
	})
	return reserved, err
}

// locking runs body on the lock table with the file's level, the
// strongest of the inode's other files and how many hold one.
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

// setLevel puts d's lock at level, waking LockRange's waits on its inode
// when it weakens; memfs.mu is held.
func (d *description) setLevel(level sqlfile.Level) {
	n := d.node
	if level < n.locks[d] && n.unlocked != nil {
		close(n.unlocked)
		n.unlocked = nil
	}
	switch {
	case level == sqlfile.None:
		delete(n.locks, d)
	case n.locks == nil:
		n.locks = map[*description]sqlfile.Level{d: level}
	default:
		n.locks[d] = level
	}
}

func (f *file) SQLiteLockState() sqlfile.Level {
	f.m.mu.Lock()
	defer f.m.mu.Unlock()
	return f.node.locks[f.description]
}

func (f *file) HasMoved() (bool, error) {
	return run(f.by, step{op: opStat, verb: "stat", path: f.name}, func() (bool, error) {
		w, err := f.m.resolve(f.name, true)
		if errors.Is(err, syscall.ENOENT) {
			return true, nil
		}
		return w.node != f.node, err
	})
}
