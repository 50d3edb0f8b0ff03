//go:build (linux || darwin || windows || freebsd || netbsd || openbsd || dragonfly || illumos) && !sqlite3_dotlk

package platform

import (
	"path/filepath"

	"github.com/proclock/proclock/internal/sqlapi"
)

// nativeSQLite is SQLite as this OS's VFS (go-sqlite3's) locks files: with
// OFD locks (linux, darwin), LockFileEx (windows) or flock (the BSDs,
// illumos). On linux the SQLite mechanism takes those locks itself
// (sqlite_bytelocks_linux.go); elsewhere through connections
// (sqlite_sql.go), which link SQLite's engine in.
var nativeSQLite SQLite = osSQLite{}

type osSQLite struct{}

// SQLiteName names the file at path for SQLite (sqlapi.SQLiteNamer): path
// itself when it is within SQLite's limit made absolute; else, where this
// OS can (linux, through /proc), a short name by way of a descriptor of
// the file's directory, which done closes; else ErrSQLitePathTooLong. The
// directory is opened by path as given, so that a relative path works in
// a working directory that has no absolute path (one longer than
// PATH_MAX, where Abs fails).
func (osSQLite) SQLiteName(path string) (name string, done func(), err error) {
	if abs, err := filepath.Abs(path); err == nil && len(abs) <= sqlapi.MaxSQLitePath && len(path) <= sqlapi.MaxSQLitePath {
		return path, func() {}, nil
	}
	clean := filepath.Clean(path) // as Abs has it: "d/x.lock/" is x.lock in d
	return shortSQLiteName(filepath.Dir(clean), filepath.Base(clean))
}
