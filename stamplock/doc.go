// Package stamplock is proclock's file mechanism, for platforms without
// SQLite: the lock is a file created with O_CREATE|O_EXCL and stamped with
// its holder's identity, a time and a random nonce. A holder that dies
// leaves its file behind; the next process judges the stamp (platform.Judge)
// and, when the holder is dead for certain, reclaims the file under a guard
// so that exactly one reclaimer wins.
//
// The package makes single attempts; waiting and in-process turns belong
// to the root package. It reaches files, processes and time only through a
// platform.Platform.
//
// Known limits: a process that crashes between creating the file and
// writing its stamp leaves an empty file that counts as held for
// UnstampedWindow; a holder stalled longer than that between the two steps
// can end up sharing the lock with the process that reclaimed its file. The
// re-read after writing makes that window as narrow as it can be.
package stamplock
