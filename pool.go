package proclock

import "github.com/proclock/proclock/internal/sqlitelock"

// idleConns is the process's one cache of idle SQLite connections, at
// most 4 in all, about 300 KB each (docs/design.md, "Module state").
var idleConns = sqlitelock.NewConnCache(4)
