package sqlitelock

import (
	"errors"
	"fmt"

	"github.com/proclock/proclock/internal/sqlapi"
)

// ErrPanic is matched by the error of a call into go-sqlite3 that
// panicked; its connection is closed, never reused (docs/design.md).
var ErrPanic = errors.New("sqlitelock: go-sqlite3 panicked")

// panicked is the error of a call into go-sqlite3 that panicked with r.
func panicked(r any) error { return fmt.Errorf("%w: %v", ErrPanic, r) }

// guarded calls f; a panic in go-sqlite3 is an error matching ErrPanic.
func guarded(f func() error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = panicked(r)
		}
	}()
	return f()
}

// exec runs sql on conn, guarded.
func exec(conn sqlapi.SQLConn, sql string) error {
	return guarded(func() error { return conn.Exec(sql) })
}

// closeConn closes conn, guarded.
func closeConn(conn sqlapi.SQLConn) error { return guarded(conn.Close) }
