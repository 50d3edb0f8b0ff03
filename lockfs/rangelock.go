package lockfs

// RangeLocker is an optional power of an FS: byte-range locks of the kind
// SQLite's own VFS takes (OFD locks on linux), through which the SQLite
// mechanism takes SQLite's lock without a connection where the platform's
// SQLite LocksBytes (docs/design.md, "Locking without SQL"). An FS that
// wraps one must forward it.
type RangeLocker interface {
	// OpenLockable opens name for reading and writing as OpenNoFollow
	// opens it: never through a symlink, never blocking on a FIFO, never
	// making a terminal this process's.
	OpenLockable(name string) (File, error)
	// TryLockRange takes a write lock on bytes [off, off+n) of f, a file
	// opened by OpenLockable, without waiting. It reports false, and no
	// error, when another open file holds a lock on any of those bytes.
	// The lock lasts until f is closed or its process dies.
	TryLockRange(f File, off, n int64) (bool, error)
	// LockRange is TryLockRange that waits in the kernel's queue until
	// the lock is granted (docs/design.md, "Waiting"). It cannot be cut
	// short; it fails when f's process dies (the fake world).
	LockRange(f File, off, n int64) error
	// RangeWriteLocked reports whether another open file holds a write
	// lock on any of bytes [off, off+n) of f, a file opened by this FS,
	// taking no lock.
	RangeWriteLocked(f File, off, n int64) (bool, error)
}
