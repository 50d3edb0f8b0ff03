package fsx

// PathLimits is an optional power of an FS: the longest path and the
// longest file name it takes, so that a lock can refuse a path whose
// sidecars would not fit before it creates anything.
type PathLimits interface {
	// PathLimits returns the longest path (in bytes, without the
	// terminating NUL) and the longest file name it takes; 0 where there
	// is no fixed limit, or none known.
	PathLimits() (path, name int)
}
