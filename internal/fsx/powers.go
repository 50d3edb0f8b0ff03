package fsx

import "github.com/proclock/proclock/lockfs"

// Flocker is an optional power of an FS: flock(2) locks, which the SQLite
// mechanism holds beside SQLite's own so that `flock FILE cmd` and
// proclock exclude each other (docs/design.md, "flock(1)"). lockfs.OS has
// it on linux, where flock(2) and OFD locks are independent.
type Flocker interface {
	// TryFlock takes a flock(2) lock on f, a file opened by this FS,
	// without waiting. It reports false, and no error, when another open
	// file holds a lock that conflicts. The lock lasts until f and its
	// duplicates are closed, or its process dies.
	TryFlock(f lockfs.File, exclusive bool) (bool, error)
	// Unflock lets go of f's flock(2) lock, keeping f open.
	Unflock(f lockfs.File) error
}

// PathLimits is an optional power of an FS: the longest path and file name
// it takes, so that a lock refuses a path whose sidecars would not fit
// before it creates anything.
type PathLimits interface {
	// PathLimits returns the longest path (in bytes, without the NUL)
	// and file name; 0 where there is no fixed limit, or none known.
	PathLimits() (path, name int)
}

// NoReplaceRenamer is an optional power of an FS: renaming to a name only
// while nothing is there, in one step (renameat2's RENAME_NOREPLACE), as
// a record written whole takes its name (lockrec.CreateWhole).
type NoReplaceRenamer interface {
	// RenameNoReplace moves oldname to newname, failing with an error
	// matching fs.ErrExist when newname exists (a symlink there
	// included, never followed). Where the filesystem or the kernel
	// cannot, it fails matching fserr.ErrNoReplaceUnsupported, having
	// done nothing. It fails as Rename does otherwise.
	RenameNoReplace(oldname, newname string) error
}
