package lockfs

// RangeLocker is an optional power of an FS: byte-range locks of the kind
// SQLite's own VFS takes on this OS (open file description locks, OFD, on
// linux), which conflict with every process's byte-range locks on the
// same bytes, POSIX fcntl locks included. The SQLite mechanism takes
// SQLite's exclusive lock through it without a connection, where the
// platform's SQLite says its VFS locks with these very locks
// (platform.SQLite's LocksBytes; docs/design.md, "Locking without SQL").
// An FS that wraps one forwards it: without it, and without connections
// (which only proclock's own SQLites open), the SQLite mechanism has no
// way to lock. It is how an FS written outside proclock lets SQLite lock.
type RangeLocker interface {
	// OpenLockable opens name for reading and writing, as OpenNoFollow
	// opens it for reading: never through a symlink at name, never
	// blocking on a FIFO, never making a terminal this process's. A
	// write lock needs a file open for writing.
	OpenLockable(name string) (File, error)
	// TryLockRange takes a write lock on bytes [off, off+n) of f, a file
	// opened by OpenLockable, without waiting. It reports false, and no
	// error, when another open file holds a lock on any of those bytes.
	// The lock lasts until f is closed, and the kernel drops it when its
	// process dies.
	TryLockRange(f File, off, n int64) (bool, error)
	// LockRange is TryLockRange that waits, in the kernel's queue, until
	// the lock is granted: the wait of a waiting Acquire, which a release
	// ends with one wake-up (docs/design.md, "Waiting"). It cannot be cut
	// short: a caller that gives up leaves it to a goroutine that closes
	// f once it returns. It fails when f's process dies (the fake world).
	LockRange(f File, off, n int64) error
	// RangeWriteLocked reports whether another open file holds a write
	// lock on any of bytes [off, off+n) of f, a file opened by this FS
	// (for reading is enough), taking no lock.
	RangeWriteLocked(f File, off, n int64) (bool, error)
}
