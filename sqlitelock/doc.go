// Package sqlitelock is proclock's SQLite mechanism: the lock is the SQLite
// database at the lock's path, held by one connection with
// locking_mode=EXCLUSIVE, journal_mode=OFF and an exclusive transaction left
// open. The file stays empty, no journal is written, and the kernel drops
// the lock the moment its holder exits or crashes, so nothing is ever
// reclaimed and no clock or pid is trusted.
//
// The holder's identity goes into "<path>.holder", for diagnostics only: it
// plays no part in who holds the lock.
//
// The package makes single attempts; waiting and in-process turns belong to
// the root package. It reaches files, SQLite and time only through a
// platform.Platform.
package sqlitelock
