package fsx

import "github.com/proclock/proclock/lockfs"

// Flocker is an optional power of an FS: flock(2) locks, held beside
// SQLite's so that flock(1) and proclock exclude each other
// (docs/design.md, "flock(1)").
type Flocker interface {
	// TryFlock takes a flock(2) lock on f, a file opened by this FS,
	// without waiting: false, and no error, when another holds one that
	// conflicts.
	TryFlock(f lockfs.File, exclusive bool) (bool, error)
	// Unflock lets go of f's flock(2) lock, keeping f open.
	Unflock(f lockfs.File) error
}

// PathLimits is an optional power of an FS: the longest path and file name
// it takes, so that a lock refuses a path whose sidecars would not fit.
type PathLimits interface {
	// PathLimits returns the longest path (in bytes, without the NUL)
	// and file name; 0 where there is no fixed limit, or none known.
	PathLimits() (path, name int)
}

// NoReplaceRenamer is an optional power of an FS: renaming to a name only
// while nothing is there, in one step (lockrec.CreateWhole).
type NoReplaceRenamer interface {
	// RenameNoReplace moves oldname to newname, failing matching
	// fs.ErrExist when newname exists (a symlink included), or matching
	// fserr.ErrNoReplaceUnsupported, having done nothing, where the
	// system cannot; otherwise as Rename.
	RenameNoReplace(oldname, newname string) error
}
