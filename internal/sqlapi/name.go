package sqlapi

import "errors"

// SQLiteNamer is an optional power of a SQLite: naming a database file
// for SQLite, whose pathname limit (MaxSQLitePath) is shorter than the
// system's. Without it, a path over the limit is refused.
type SQLiteNamer interface {
	// SQLiteName returns the name by which SQLite is to open the file at
	// path, and done, to call once SQLite has opened it or failed to. A
	// path that cannot be named fails with ErrSQLitePathTooLong.
	SQLiteName(path string) (name string, done func(), err error)
}

// MaxSQLitePath is the longest absolute path SQLite opens a database by:
// its VFS's limit (1024 bytes) less the 8 of "-journal".
const MaxSQLitePath = 1024 - len("-journal")

// ErrSQLitePathTooLong is matched by SQLiteName's error for a path longer
// than MaxSQLitePath that cannot be named shorter on this system.
var ErrSQLitePathTooLong = errors.New("path too long for SQLite")
