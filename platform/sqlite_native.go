//go:build (linux || darwin || windows || freebsd || netbsd || openbsd || dragonfly || illumos) && !sqlite3_dotlk

package platform

import "github.com/ncruces/go-sqlite3"

// nativeSQLite opens databases through the VFS of this OS, which locks
// files with OFD locks (linux, darwin), LockFileEx (windows) or flock (the
// BSDs, illumos).
var nativeSQLite SQLite = osSQLite{}

type osSQLite struct{}

func (osSQLite) Open(path string, flags sqlite3.OpenFlag) (*sqlite3.Conn, error) {
	return sqlite3.OpenFlags(path, flags)
}
