// Package sqlfile is what the fake world offers a SQLite VFS over its
// filesystem (package fake/fakesql's), without SQLite: the lock table's
// levels and answers, and the powers of a fake process's FS and files that
// the VFS opens, locks and reads through. Package fake implements them, so
// that a test that never opens a connection compiles no SQLite engine.
package sqlfile

import (
	"io/fs"

	"github.com/proclock/proclock/lockfs"
)

// Level is a file's level in its inode's lock table, as SQLite numbers
// its locks.
type Level int

// The levels, weakest first.
const (
	None Level = iota
	Shared
	Reserved
	Pending
	Exclusive
)

// Answer is the lock table's refusal of a lock call: not an I/O failure.
type Answer int

const (
	// Busy: another file of the inode holds a conflicting level.
	Busy Answer = iota + 1
	// BadLock: a raise SQLite never asks for, or a write lock on a file
	// opened read-only (SQLite's IOERR_LOCK).
	BadLock
	// BadUnlock: a lowering to a level other than Shared or None
	// (SQLite's IOERR_UNLOCK).
	BadUnlock
)

func (a Answer) Error() string {
	switch a {
	case Busy:
		return "fake: lock busy"
	case BadLock:
		return "fake: lock not to be taken"
	}
	return "fake: unlock not to be made"
}

// FS is the power of a fake process's FS by which a VFS opens files.
type FS interface {
	lockfs.FS
	// SQLiteOpen opens name for SQLite with os.OpenFile's flags (a name of
	// "" is a temporary file: an inode no directory names, private to its
	// opener, which runs no hook and which the world does not count as
	// open). The file is opened without sharing delete, as go-sqlite3
	// opens on windows (World.WindowsSharing); a directory is refused
	// (syscall.EISDIR), as is a handle of a process killed meanwhile.
	SQLiteOpen(name string, flag int, perm fs.FileMode) (File, error)
	// SQLiteStat describes the file at name, following symlinks.
	SQLiteStat(name string) (fs.FileInfo, error)
}

// File is a file opened by SQLiteOpen.
type File interface {
	lockfs.File
	Sync() error
	// SQLiteLock raises the file's level to want, as SQLite's xLock;
	// Busy on a conflict. A refused raise to Exclusive from Reserved
	// leaves the file at Pending.
	SQLiteLock(want Level) error
	// SQLiteUnlock lowers the file's level to Shared or None.
	SQLiteUnlock(to Level) error
	// SQLiteReserved reports whether this file, or another of its inode,
	// holds Reserved or more.
	SQLiteReserved() (bool, error)
	// SQLiteLockState is the file's level.
	SQLiteLockState() Level
	// SQLiteHasMoved reports whether the file's name now names another
	// file, or nothing.
	SQLiteHasMoved() (bool, error)
}
