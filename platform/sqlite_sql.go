//go:build (darwin || windows || freebsd || netbsd || openbsd || dragonfly || illumos || (linux && sqlite3_flock)) && !sqlite3_dotlk

package platform

import (
	"github.com/proclock/proclock/internal/sqlapi"
	"github.com/proclock/proclock/internal/sqlconn"
)

// LocksBytes is false: the byte-range path is not yet proven against this
// OS's VFS.
func (osSQLite) LocksBytes() bool { return false }

// Connect opens an in-memory connection to attach lock files to
// (SQLConnector): what links go-sqlite3 into a build for this OS.
func (osSQLite) Connect() (sqlapi.SQLConn, error) {
	c, err := sqlconn.OpenOS()
	if err != nil {
		return nil, err
	}
	return c, nil
}
