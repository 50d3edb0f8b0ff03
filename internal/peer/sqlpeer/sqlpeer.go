// Package sqlpeer gives the native peers of a test binary that imports it
// the SQL path (peer.MechanismSQLiteSQL), which links SQLite's engine in.
package sqlpeer

import (
	"github.com/proclock/proclock/internal/peer"
	"github.com/proclock/proclock/internal/sqlpath"
)

func init() { peer.SQLPath = sqlpath.Native }
