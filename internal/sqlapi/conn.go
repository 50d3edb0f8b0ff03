// Package sqlapi is the SQL path of a platform's SQLite: connections
// (SQLConnector), SQLite's result codes, and names SQLite can open
// (SQLiteNamer). They are optional powers of a platform.SQLite, found by
// type assertion (docs/design.md, "Locking without SQL"); a SQLite has
// them by having their methods, so a package that links SQLite's engine
// implements them without naming this package. The SQLite mechanism, the
// native platform, package fake/fakesql and tests use them; a user's
// Platform needs none of them to lock by byte ranges.
//
// It imports nothing of proclock, so that platform may import it, and no
// SQL engine, so that a linux build compiles none.
package sqlapi

import "context"

// SQLConnector is an optional power of a SQLite: connections, for the
// SQL path (a SQLite whose LocksBytes is false, or a FS without
// byte-range locks). Without either, the SQLite mechanism cannot lock.
type SQLConnector interface {
	// LocksBytes is platform.SQLite's method, written out: this package
	// sits below platform.
	LocksBytes() bool
	// Connect opens a connection with no database of its own (an
	// in-memory one), through the VFS that locks the FS's files, to which
	// the mechanism attaches a lock's database file.
	Connect() (SQLConn, error)
}

// SQLConn is a connection of a SQLConnector: what the SQLite mechanism
// does with one. Its errors from SQLite match the SQLiteCode of their
// primary result code (errors.Is(err, SQLiteBusy)); what else they match
// is the implementation's.
type SQLConn interface {
	// Exec runs one or more SQL statements.
	Exec(sql string) error
	// BusyHandler sets the function SQLite calls while a lock it wants is
	// busy, with the number of times it did so for this lock: true to try
	// again, false to fail with SQLiteBusy. Nil: fail at once.
	BusyHandler(func(ctx context.Context, count int) bool) error
	// InTransaction reports whether a transaction is open (SQLite's
	// autocommit is off).
	InTransaction() bool
	// Reserved reports whether the connection holds SQLite's RESERVED
	// lock, or a stronger one, on the database attached as schema: false
	// when it does not, or when its VFS cannot tell.
	Reserved(schema string) bool
	// Close closes the connection, which lets go of its locks.
	Close() error
}
