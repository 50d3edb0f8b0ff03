//go:build !(sqlite3_flock || sqlite3_dotlk)

package platform

// LocksBytes says that the OS's VFS locks database files with the OFD
// locks of lockfs.OS (SQLiteByteLocks): go-sqlite3's VFS on linux takes
// F_OFD_SETLK locks at SQLite's locking bytes, which also conflict with
// the POSIX locks of SQLite's own C library in other processes.
func (osSQLite) LocksBytes() {}
