// Package lockfile reaches, for the proclock command, the open file through
// which a held lock of package proclock holds its kernel locks, so that
// `proclock run` can hand it to COMMAND's processes to inherit (flock(1)'s
// way: docs/command.md, "The lock and COMMAND's processes"). It is no part
// of the library's API: package proclock sets Of.
package lockfile

import "github.com/proclock/proclock/lockfs"

// Of returns the open file of lock (a *proclock.Lock) that holds its
// kernel locks: a SQLite lock's pinned file, which holds SQLite's
// byte-range locks and the flock(2) lock where the platform takes them, or
// a lock file's stamped file; nil when it has none, or lock is not a held
// lock. It is set by package proclock.
var Of func(lock any) lockfs.File
