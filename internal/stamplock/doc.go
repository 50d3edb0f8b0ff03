// Package stamplock is proclock's file mechanism: a file created
// exclusively, holding its holder's stamp; a dead holder's is converted in
// place under a guard, and a SQLite holder's mark keeps it out
// (docs/protocol.md). It reaches the world only through a platform.Platform.
package stamplock
