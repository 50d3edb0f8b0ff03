// Package sqlitelock is proclock's SQLite mechanism: the lock is SQLite's
// exclusive lock on the SQLite database at the lock's path, taken as
// SQLite's byte-range locks without a connection where the platform's
// SQLite locks bytes (platform.SQLite.LocksBytes: linux, the fake world),
// else held by one connection (sqlapi.SQLConnector) with
// locking_mode=EXCLUSIVE, journal_mode=OFF and an exclusive transaction
// left open. The package itself links no SQLite engine: connections come
// from the platform. The file is an empty database (one page, no tables:
// lockrec.EmptyDatabase) that SQLite never writes, no journal is written,
// and the kernel drops
// the lock the moment its holder exits or crashes, so nothing is ever
// reclaimed and no clock or pid is trusted.
//
// The holder's identity goes into "<path>.holder", its mark: for
// diagnostics, and to keep processes of the file mechanism out
// (docs/protocol.md). It plays no part in who holds the lock among SQLite
// processes.
//
// The contract:
//   - Acquire makes one attempt, with ctx first: it returns a held *Lock, a
//     *lockrec.HeldError (made a proclock.HeldError, matching proclock.ErrHeld)
//     naming the mark's holder when another process holds the lock, an
//     error matching ErrStamped when a stamp of the file mechanism is at
//     the path (for the caller to judge), or another error. Its Attempt
//     says how a busy lock is met (Retry) and with whose identity the mark
//     is written.
//   - Probe reports the lock's lockrec.State (absent, free or held), writing
//     nothing; a stamp is ErrStamped there too.
//   - Lock.Release lets go, once; calling it again does nothing.
//
// Waiting beyond an attempt's short retries, in-process turns and the
// choice of mechanism belong to the root package; which errors wrap which
// system or SQLite error is unspecified beyond the sentinels named here
// (ErrNoConnections: no way to lock). The package reaches files, SQLite and
// time only through a platform.Platform.
package sqlitelock
