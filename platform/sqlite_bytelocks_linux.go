//go:build !(sqlite3_flock || sqlite3_dotlk)

package platform

// LocksBytes is true: go-sqlite3's VFS on linux locks database files with
// F_OFD_SETLK locks at SQLite's locking bytes, the OFD locks of lockfs.OS,
// which also conflict with the POSIX locks of SQLite's own C library in
// other processes. The SQLite mechanism takes them itself, and no SQLite
// engine is compiled in (docs/design.md, "What compiles where").
func (osSQLite) LocksBytes() bool { return true }
