// Package sqlconn is proclock's one door to SQLite's engine
// (github.com/ncruces/go-sqlite3): connections for the SQL path of the
// SQLite mechanism, on the OS's VFS or a fake world's. Only what opens
// connections imports it, so a linux build leaves the engine out
// (docs/design.md, "What compiles where"). It imports nothing of
// proclock: its Conn has sqlapi.SQLConn's methods.
package sqlconn

import (
	"context"
	"errors"
	"strings"

	"github.com/ncruces/go-sqlite3"
	"github.com/ncruces/go-sqlite3/vfs"
)

// Conn is a connection to SQLite through go-sqlite3 (sqlapi.SQLConn).
type Conn struct{ c *sqlite3.Conn }

// OpenMemory opens an in-memory database through the VFS registered as
// vfsName, to attach lock files to. A lock's database has no write-ahead
// log, so closing one skips the checkpoint, and its stat of the path.
func OpenMemory(vfsName string) (*Conn, error) {
	c, err := sqlite3.OpenFlags("file::memory:?vfs="+vfsName, sqlite3.OPEN_READWRITE|sqlite3.OPEN_CREATE|sqlite3.OPEN_URI)
	if err != nil {
		return nil, wrap(err)
	}
	if _, err := c.Config(sqlite3.DBCONFIG_NO_CKPT_ON_CLOSE, true); err != nil {
		c.Close()
		return nil, wrap(err)
	}
	return &Conn{c}, nil
}

// OpenOS is OpenMemory through the OS's VFS (DirectVFS).
func OpenOS() (*Conn, error) {
	if vfs.Find(DirectVFS) == nil {
		return nil, errors.New("sqlconn: the OS's SQLite VFS is not registered")
	}
	return OpenMemory(DirectVFS)
}

// Raw is the go-sqlite3 connection c wraps.
func (c *Conn) Raw() *sqlite3.Conn { return c.c }

// Exec runs sql.
func (c *Conn) Exec(sql string) error { return wrap(c.c.Exec(sql)) }

// BusyHandler sets the function SQLite calls while a lock is busy.
func (c *Conn) BusyHandler(f func(ctx context.Context, count int) bool) error {
	return wrap(c.c.BusyHandler(f))
}

// InTransaction reports whether a transaction is open.
func (c *Conn) InTransaction() bool { return !c.c.GetAutocommit() }

// Reserved reports whether c holds the RESERVED lock, or more, on the
// database attached as schema; false when its VFS cannot tell.
func (c *Conn) Reserved(schema string) bool {
	level, err := c.c.FileControl(schema, sqlite3.FCNTL_LOCKSTATE)
	lock, ok := level.(vfs.LockLevel)
	return err == nil && ok && lock >= vfs.LOCK_RESERVED
}

// Close closes the connection.
func (c *Conn) Close() error { return wrap(c.c.Close()) }

// Error is an error of go-sqlite3. It matches a sqlapi.SQLiteCode of its
// primary result code, and whatever go-sqlite3's error matches.
type Error struct{ err error }

func wrap(err error) error {
	if err == nil {
		return nil
	}
	return &Error{err}
}

func (e *Error) Error() string { return e.err.Error() }

func (e *Error) Unwrap() error { return e.err }

// Is matches a result code given as a value with SQLiteResultCode (as
// sqlapi.SQLiteCode has) that is e's primary code.
func (e *Error) Is(target error) bool {
	t, ok := target.(interface{ SQLiteResultCode() int })
	code, isCode := errors.AsType[sqlite3.ErrorCode](e.err)
	return ok && isCode && int(code) == t.SQLiteResultCode()
}

// SQLiteWords are SQLite's words for e's primary result code ("database is
// locked"), or e's message when it has none.
func (e *Error) SQLiteWords() string {
	words := e.err.Error()
	if code, ok := errors.AsType[sqlite3.ErrorCode](e.err); ok {
		words = code.Error()
	}
	return strings.TrimPrefix(words, "sqlite3: ")
}
