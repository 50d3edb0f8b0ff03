// Package lockfile reaches, for the proclock command, the open file that
// holds a held lock's kernel locks, so that `proclock run` can hand it to
// COMMAND's processes (docs/command.md, "The lock and COMMAND's
// processes"). Package proclock sets Of.
package lockfile

import "github.com/proclock/proclock/lockfs"

// Of returns the open file of lock (a *proclock.Lock) that holds its
// kernel locks, or its stamped lock file; nil when it has none, or lock is
// not a held lock.
var Of func(lock any) lockfs.File
