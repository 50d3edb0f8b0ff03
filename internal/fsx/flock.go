package fsx

import "github.com/proclock/proclock/lockfs"

// Flocker is an optional power of an FS: flock(2) locks, the locks
// flock(1) takes. The SQLite mechanism holds one beside SQLite's own, so
// that `flock FILE cmd` and proclock exclude each other (docs/design.md,
// "flock(1)"). lockfs.OS has it on linux, where flock(2) locks and the
// OFD locks SQLite takes are independent of each other.
type Flocker interface {
	// TryFlock takes a flock(2) lock on f, a file opened by this FS,
	// exclusive or shared, without waiting. It reports false, and no
	// error, when another open file holds a lock that conflicts. The
	// lock lasts until f (and every descriptor duplicated from it) is
	// closed; the kernel drops it when its process dies.
	TryFlock(f lockfs.File, exclusive bool) (bool, error)
	// Unflock lets go of f's flock(2) lock, keeping f open: a holder
	// lets go of it before the other locks it closes f on.
	Unflock(f lockfs.File) error
}
