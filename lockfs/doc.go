// Package lockfs is the filesystem a proclock lock lives in: FS, the nine
// operations locks perform (opening, with and without following symlinks,
// lstat, remove, rename, hard link, and file and directory identities with
// birth time), and optional powers found by type assertion: NetworkFS,
// which keeps locks off a network filesystem, and RangeLocker, which lets
// SQLite's lock be taken without a connection. A Platform for a new host
// implements FS; the conformance suite checks it. (The powers that only
// make proclock's own OS and fake faster or sturdier are internal.)
//
// OS returns the implementation over the real filesystem; package fake
// gives an in-memory one. Everything OS-specific in proclock's use of files
// lives here, one file per OS family.
//
// There is no adapter from afero.Fs: a lock needs what afero does not give
// (hard links, file identity, opening without following or blocking), so
// an adapter would be an FS written anew, no shorter than one over the
// host's own calls.
package lockfs
