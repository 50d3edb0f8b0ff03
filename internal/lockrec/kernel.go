package lockrec

import (
	"github.com/proclock/proclock/internal/fsx"
	"github.com/proclock/proclock/lockfs"
)

// SQLite's lock bytes, 1 GiB into the file: the pending byte, the reserved
// byte, 510 shared bytes (docs/design.md, "Locking without SQL").
const (
	SQLitePendingByte = 0x40000000
	SQLiteLockBytes   = 2 + 510
)

// SQLiteLockReason is the HeldError.Reason of a lock held by a SQLite lock
// no mark names (a connection outside proclock, a holder through a link).
const SQLiteLockReason = "a SQLite lock on the file"

// FlockReason is the HeldError.Reason of a lock held by a flock(2) lock.
const FlockReason = "a flock(2) lock"

// LockedReason is the HeldError.Reason of a lock whose file f another
// holds a SQLite or flock(2) lock on; "" when neither.
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

// KernelLocked reports whether another holds a SQLite write lock on f,
// where the FS has byte-range locks (a wasm guest's has none: docs/wasm.md).
func KernelLocked(fsys lockfs.FS, f lockfs.File) (bool, error) {
	rl, ok := fsys.(lockfs.RangeLocker)
	if !ok {
		return false, nil
	}
	return rl.RangeWriteLocked(f, SQLitePendingByte, SQLiteLockBytes)
}

// Flocked reports whether another holds a flock(2) lock on f that a shared
// one conflicts with, where the FS has them (docs/design.md, "flock(1)").
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
