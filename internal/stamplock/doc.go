// Package stamplock is proclock's file mechanism, for platforms without
// SQLite: the lock is a file created with O_CREATE|O_EXCL and stamped with
// its holder's identity, a time and a random nonce (a lockrec.Record). A
// holder that dies leaves its file behind; the next process judges the
// stamp (platform.Judge) and, when the holder is dead for certain, reclaims
// the file under a guard so that exactly one reclaimer wins. A SQLite
// holder's mark ("<path>.holder") keeps it out (docs/protocol.md).
//
// The contract:
//   - Acquire makes one attempt, with ctx first, for here, this process's
//     identity: it returns a held *Lock, a *lockrec.HeldError
//     (made a proclock.HeldError, matching proclock.ErrHeld) naming the holder when
//     the lock is held, or another error.
//   - Look reports what is at the lock's path, judged from here, as a
//     Probe whose State is a lockrec.State (absent, held or stale), writing
//     nothing.
//   - Guard and Clear are what the SQLite mechanism needs of this one to
//     settle with a stamp: the guard under which a lock's files change,
//     and the emptying of a dead holder's stamp.
//   - Lock.Release removes the lock file while it is still the one this
//     holder stamped; ErrLost when it is not.
//
// Waiting, in-process turns and the choice of mechanism belong to the root
// package. The package reaches files, processes and time only through a
// platform.Platform.
//
// Known limits: a process that crashes between creating the file and
// writing its stamp leaves an empty file that counts as held for
// UnstampedWindow; a holder stalled longer than that between the two steps
// can end up sharing the lock with the process that reclaimed its file. The
// re-read after writing makes that window as narrow as it can be.
package stamplock
