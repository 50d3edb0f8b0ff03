package lockfs

// PathLimits is an optional power of an FS: the longest path and the
// longest file name it takes, so that a lock can refuse a path whose
// sidecars would not fit before it creates anything.
type PathLimits interface {
	// PathLimits returns the longest path (in bytes, without the
	// terminating NUL) and the longest file name it takes; 0 where there
	// is no fixed limit, or none known.
	PathLimits() (path, name int)
}

// PathLimits is PATH_MAX-1 and NAME_MAX on linux, darwin, the BSDs and
// illumos; 0 (not known) elsewhere.
func (osFS) PathLimits() (path, name int) { return pathMax - 1, nameMax }
