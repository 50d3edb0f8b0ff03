//go:build !(linux || darwin || windows || freebsd || netbsd || openbsd || dragonfly || illumos)

package platform

// nativeSQLite is nil: SQLite's VFS cannot lock files here (wasip1, js), so
// the file mechanism is used.
var nativeSQLite SQLite
