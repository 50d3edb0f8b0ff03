// Package sqlfile is what the fake world offers fakesql's VFS, without
// SQLite: the lock table's levels and answers, and the powers of a fake
// process's FS and files. Package fake implements them, so that a test
// that opens no connection compiles no SQLite engine.
package sqlfile

import (
	"io/fs"
	"path"
	"path/filepath"
	"strings"

	"github.com/proclock/proclock/lockfs"
)

// Clean turns a name into the absolute, cleaned, slash-separated path the
// world's tree is walked by: relative names start from "/"; on windows a
// volume name is dropped. path.Clean does not allocate for a clean name.
func Clean(name string) string {
	name = filepath.ToSlash(name[len(filepath.VolumeName(name)):])
	if !strings.HasPrefix(name, "/") {
		name = "/" + name
	}
	return path.Clean(name)
}

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

// Answer is the lock table's refusal of a lock call: no I/O failure.
type Answer int

const (
	Busy    Answer = iota + 1 // a conflicting level is held: SQLite's BUSY
	BadLock                   // a write lock on a read-only file
)

func (a Answer) Error() string { return [...]string{"", "busy", "bad lock"}[a] }

// FS is the power of a fake process's FS by which a VFS opens files.
type FS interface {
	lockfs.FS
	// SQLiteOpen opens name with os.OpenFile's flags, without sharing
	// delete (World.WindowsSharing); "" is a temporary file no directory
	// names. A directory is refused (syscall.EISDIR).
	SQLiteOpen(name string, flag int, perm fs.FileMode) (File, error)
	SQLiteStat(name string) (fs.FileInfo, error) // following symlinks
}

// File is a file opened by SQLiteOpen: xLock, xUnlock and the rest on the
// lock table.
type File interface {
	lockfs.File
	Sync() error
	SQLiteLock(want Level) error // a refused Exclusive leaves a Reserved one at Pending
	SQLiteUnlock(to Level) error
	CheckReservedLock() (bool, error) // whether some file of the inode holds Reserved or more
	SQLiteLockState() Level
	HasMoved() (bool, error) // whether the name now names another file, or none
}
