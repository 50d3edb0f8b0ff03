//go:build !(sqlite3_flock || sqlite3_dotlk)

package platform

// LocksBytes is true: go-sqlite3's VFS on linux locks with OFD locks at
// SQLite's locking bytes, lockfs.OS's, which also conflict with the POSIX
// locks of SQLite's C library (docs/design.md, "What compiles where").
func (osSQLite) LocksBytes() bool { return true }
