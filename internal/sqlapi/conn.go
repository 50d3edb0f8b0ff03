// Package sqlapi is the SQL path of a platform's SQLite: connections
// (SQLConnector), SQLite's result codes, and names SQLite can open
// (SQLiteNamer), optional powers of a platform.SQLite found by type
// assertion (docs/design.md, "Locking without SQL"). It imports nothing of
// proclock, so that platform may import it, and no SQL engine, so that a
// linux build compiles none.
package sqlapi

import "context"

// SQLConnector is an optional power of a SQLite: connections, for the SQL
// path.
type SQLConnector interface {
	// LocksBytes is platform.SQLite's method: this package sits below
	// platform.
	LocksBytes() bool
	// Connect opens an in-memory connection, through the VFS that locks
	// the FS's files, to attach a lock's database to.
	Connect() (SQLConn, error)
}

// SQLConn is a connection of a SQLConnector. Its errors from SQLite match
// the SQLiteCode of their primary result code.
type SQLConn interface {
	Exec(sql string) error
	// BusyHandler sets the function SQLite calls while a lock it wants is
	// busy: true to try again. Nil: fail at once.
	BusyHandler(func(ctx context.Context, count int) bool) error
	// InTransaction reports whether a transaction is open.
	InTransaction() bool
	// Reserved reports whether the connection holds SQLite's RESERVED
	// lock, or a stronger one, on the database attached as schema; false
	// when its VFS cannot tell.
	Reserved(schema string) bool
	Close() error
}
