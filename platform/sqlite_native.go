//go:build (linux || darwin || windows || freebsd || netbsd || openbsd || dragonfly || illumos) && !sqlite3_dotlk

package platform

import (
	"path/filepath"

	"github.com/proclock/proclock/internal/sqlapi"
)

// nativeSQLite is SQLite as go-sqlite3's VFS locks files here: taken by
// the mechanism itself on linux, through connections elsewhere.
var nativeSQLite SQLite = osSQLite{}

type osSQLite struct{}

// SQLiteName names the file at path for SQLite (sqlapi.SQLiteNamer): path
// itself when within SQLite's limit made absolute; else, on linux, a short
// name by way of a descriptor of its directory, which done closes (opened
// by path as given: a working directory longer than PATH_MAX has no
// absolute path); else ErrSQLitePathTooLong.
func (osSQLite) SQLiteName(path string) (name string, done func(), err error) {
	if abs, err := filepath.Abs(path); err == nil && len(abs) <= sqlapi.MaxSQLitePath && len(path) <= sqlapi.MaxSQLitePath {
		return path, func() {}, nil
	}
	clean := filepath.Clean(path) // as Abs has it: "d/x.lock/" is x.lock in d
	return shortSQLiteName(filepath.Dir(clean), filepath.Base(clean))
}
