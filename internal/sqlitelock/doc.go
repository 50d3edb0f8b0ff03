// Package sqlitelock is proclock's SQLite mechanism: the lock is SQLite's
// exclusive lock on the empty database at the lock's path, taken as
// SQLite's byte-range locks where the platform's SQLite locks bytes, else
// held by a connection in exclusive locking mode with a transaction left
// open. The kernel drops it when its holder dies, so nothing is reclaimed.
// The holder's mark, "<path>.holder", names it and keeps file-mechanism
// processes out (docs/protocol.md).
//
// Acquire makes one attempt: a held *Lock, a *lockrec.HeldError, an error
// matching ErrStamped (a stamp for the caller to judge), or another error.
// Probe reports the lock's state, writing nothing. Waiting, turns and the
// choice of mechanism belong to the root package.
package sqlitelock
