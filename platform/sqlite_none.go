//go:build !(linux || darwin || windows || freebsd || netbsd || openbsd || dragonfly || illumos) || sqlite3_dotlk

package platform

// nativeSQLite is nil: SQLite's VFS cannot lock files here (wasip1, js),
// or locks with dot-files that outlive a crashed holder (sqlite3_dotlk).
var nativeSQLite SQLite
