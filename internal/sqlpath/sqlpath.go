// Package sqlpath is the SQL path of the SQLite mechanism on the native
// platform of any OS: SQLite's lock taken through a connection, as on
// darwin, windows and the BSDs, and as proclock took it on linux before it
// took SQLite's byte-range locks itself. Tests use it to stage an older
// proclock, or another OS's, beside the byte-range path; it links SQLite's
// engine in (internal/sqlconn), which no library package does on linux.
package sqlpath

import (
	"github.com/proclock/proclock/internal/sqlapi"
	"github.com/proclock/proclock/internal/sqlconn"
	"github.com/proclock/proclock/platform"
)

// Native returns a SQLite that locks the native FS's files through
// connections on the OS's VFS (LocksBytes false), naming them for SQLite
// as the native platform does. The same value every call.
func Native() platform.SQLite { return native }

var native = &osSQL{}

type osSQL struct{}

var (
	_ sqlapi.SQLConnector = (*osSQL)(nil)
	_ sqlapi.SQLiteNamer  = (*osSQL)(nil)
)

func (*osSQL) LocksBytes() bool { return false }

func (*osSQL) Connect() (sqlapi.SQLConn, error) {
	c, err := sqlconn.OpenOS()
	if err != nil {
		return nil, err
	}
	return c, nil
}

// SQLiteName names a file as the native platform's SQLite does, where it
// can (sqlapi.SQLiteNamer); else a path is its own name.
func (*osSQL) SQLiteName(path string) (string, func(), error) {
	if n, ok := platform.Native().SQLite.(sqlapi.SQLiteNamer); ok {
		return n.SQLiteName(path)
	}
	return path, func() {}, nil
}
