// Package lockfs is the filesystem a proclock lock lives in: FS, the
// operations locks perform (opening with and without following symlinks,
// lstat, remove, rename, hard link, file and directory identities with
// birth time), and optional powers found by type assertion: NetworkFS and
// RangeLocker. A Platform for a new host implements FS; the conformance
// suite checks it. OS returns the implementation over the real
// filesystem, one file per OS family; package fake gives an in-memory one.
//
// There is no adapter from afero.Fs: a lock needs what afero does not give
// (hard links, file identity, opening without following or blocking), so
// an adapter would be an FS written anew.
package lockfs
