package fake

import "github.com/proclock/proclock/platform"

// processSQLite is a process's platform.SQLite: SQLite's locks, kept in the
// world's lock table, which the process's FS's byte-range locks
// (lockfs.RangeLocker) and real SQLite's connections over the fake FS
// (package fake/fakesql) share. It opens no connections: the SQLite
// mechanism takes the lock as byte-range locks, as on linux, and a test
// that wants connections, or the SQL path, asks fakesql for them.
type processSQLite struct{ p *Process }

var _ platform.SQLite = (*processSQLite)(nil)

// sqlite returns the process's SQLite: one value for the process's life,
// so that its platforms share in-process turns.
func (p *Process) sqlite() *processSQLite {
	p.sqliteOnce.Do(func() { p.sqliteVal = &processSQLite{p: p} })
	return p.sqliteVal
}

// LocksBytes is true: the process's SQLite locks files on the lock table
// its FS's byte-range locks use.
func (s *processSQLite) LocksBytes() bool { return true }
