// Package sqlpeer gives the native peers of a test binary that imports it
// the SQL path (peer.MechanismSQLiteSQL), which links SQLite's engine in.
package sqlpeer

import (
	"github.com/proclock/proclock/internal/locktest/sqlpath"
	"github.com/proclock/proclock/internal/peer"
)

func init() { peer.SQLPath = sqlpath.Native }
