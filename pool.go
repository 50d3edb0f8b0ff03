package proclock

import (
	"github.com/proclock/proclock/internal/sqlitelock"
	"github.com/proclock/proclock/platform"
)

// idleConns is the process's one cache of idle SQLite connections, at
// most 4 in all, about 300 KB each (docs/design.md, "Module state").
var idleConns = sqlitelock.NewConnCache(4)

// connPool lends connections of sq from idleConns.
func connPool(sq platform.SQLite) sqlitelock.Conns { return idleConns.For(sq) }
