// Package stamplock is proclock's file mechanism: the lock is a file
// created exclusively, holding its holder's stamp (a lockrec.Record). A
// stamp whose holder is dead for certain is converted in place under a
// guard, by exactly one reclaimer; a SQLite holder's mark keeps it out
// (docs/protocol.md). Acquire makes one attempt; waiting, turns and the
// choice of mechanism belong to the root package. Files, processes and
// time are reached only through a platform.Platform.
package stamplock
