package lockrec

import (
	"github.com/proclock/proclock/internal/fsx"
	"github.com/proclock/proclock/lockfs"
)

// SQLite locks a database file with byte-range locks on bytes its file
// format sets aside for them (the lock-byte page, 1 GiB into the file,
// which a lock's one-page database never reaches): the pending byte, the
// reserved byte after it, and 510 shared bytes after that
// (docs/design.md, "Locking without SQL").
const (
	SQLitePendingByte = 0x40000000
	SQLiteLockBytes   = 2 + 510
)

// SQLiteLockReason is the HeldError.Reason of a lock held by a SQLite lock
// on its file that no mark names: a connection outside proclock (the
// sqlite3 shell, python's sqlite3 in a transaction), or a proclock holder
// reached through another name of the file (a hard link), whose mark is
// beside that other name.
const SQLiteLockReason = "a SQLite lock on the file"

// FlockReason is the HeldError.Reason of a lock held by a flock(2) lock on
// its file: flock(1)'s, or another program's.
const FlockReason = "a flock(2) lock"

// LockedReason is the HeldError.Reason of a lock whose file f another
// holds a SQLite lock on (KernelLocked: SQLiteLockReason) or a flock(2)
// lock (Flocked: FlockReason); "" when neither.
func LockedReason(fsys lockfs.FS, f lockfs.File) (string, error) {
	locked, err := KernelLocked(fsys, f)
	switch {
	case err != nil:
		return "", err
	case locked:
		return SQLiteLockReason, nil
	case Flocked(fsys, f):
		return FlockReason, nil
	}
	return "", nil
}

// KernelLocked reports whether another holds a SQLite write lock (an
// exclusive holder's, or a writer's reserved or pending lock) on f, a file
// the FS opened, as the kernel sees it: where the FS has byte-range locks
// (lockfs.RangeLocker). Where it has none (a wasm guest), a SQLite lock
// cannot be seen, and it reports false (docs/wasm.md). A mere reader's
// shared lock is no holder's, and reads as unlocked.
func KernelLocked(fsys lockfs.FS, f lockfs.File) (bool, error) {
	rl, ok := fsys.(lockfs.RangeLocker)
	if !ok {
		return false, nil
	}
	return rl.RangeWriteLocked(f, SQLitePendingByte, SQLiteLockBytes)
}

// Flocked reports whether another holds a flock(2) lock on f, a file the
// FS opened, that a shared one would conflict with (flock(1)'s, or a
// SQLite holder's beside its own lock: docs/design.md, "flock(1)"), where
// the FS has them (fsx.Flocker). The shared lock it takes to tell is
// let go of at once.
func Flocked(fsys lockfs.FS, f lockfs.File) bool {
	fl, ok := fsys.(fsx.Flocker)
	if !ok {
		return false
	}
	got, err := fl.TryFlock(f, false)
	if err == nil && got {
		fl.Unflock(f)
	}
	return err == nil && !got
}
