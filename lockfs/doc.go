// Package lockfs is the filesystem a proclock lock lives in: afero.Fs plus
// the few powers a lock needs that afero lacks (hard links, file identity
// with birth time, opening without following symlinks or blocking, and
// resolving a directory through its symlinks).
//
// OS returns the implementation over the real filesystem; package fake
// gives an in-memory one. Everything OS-specific in proclock's use of files
// lives here, one file per OS family.
package lockfs
