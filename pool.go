package proclock

import (
	"github.com/proclock/proclock/internal/sqlitelock"
	"github.com/proclock/proclock/platform"
)

// maxIdleConns is how many idle SQLite connections are kept in all, across
// SQLite values. Each costs about 300 KB.
const maxIdleConns = 4

// idleConns is the process's one cache of idle SQLite connections
// (sqlitelock.ConnCache, the plumbing): module state, held here
// (docs/design.md). An acquisition or a probe borrows a connection, attaches
// the lock's database to it, and gives it back detached.
var idleConns = sqlitelock.NewConnCache(maxIdleConns)

// connPool lends connections of sq from idleConns.
func connPool(sq platform.SQLite) sqlitelock.Conns { return idleConns.For(sq) }
