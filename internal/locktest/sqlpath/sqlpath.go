// Package sqlpath, test machinery, is the SQLite mechanism's SQL path on
// the native platform of any OS: the lock taken through a connection, as
// on darwin, windows and the BSDs. Tests and peers use it to stage that
// path beside the byte-range one; it links SQLite's engine in
// (internal/sqlconn).
package sqlpath

import (
	"github.com/proclock/proclock/internal/sqlapi"
	"github.com/proclock/proclock/internal/sqlconn"
	"github.com/proclock/proclock/platform"
)

// Native returns a SQLite that locks the native FS's files through
// connections on the OS's VFS, naming them as the native platform does.
// The same value every call.
func Native() platform.SQLite { return native }

var native = &osSQL{}

type osSQL struct{}

func (*osSQL) LocksBytes() bool { return false }

func (*osSQL) Connect() (sqlapi.SQLConn, error) {
	c, err := sqlconn.OpenOS()
	if err != nil {
		return nil, err
	}
	return c, nil
}

// SQLiteName names a file as the native platform's SQLite does, where it
// can; else a path is its own name.
func (*osSQL) SQLiteName(path string) (string, func(), error) {
	if n, ok := platform.Native().SQLite.(sqlapi.SQLiteNamer); ok {
		return n.SQLiteName(path)
	}
	return path, func() {}, nil
}
