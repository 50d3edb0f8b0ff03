package fake

import "github.com/proclock/proclock/platform"

// processSQLite is a process's platform.SQLite: SQLite's locks taken as
// its FS's byte-range locks, as on linux; fakesql's has connections.
type processSQLite struct{ p *Process }

var _ platform.SQLite = (*processSQLite)(nil)

func (*processSQLite) LocksBytes() bool { return true }
