package sqlitelock

import (
	"errors"
	"fmt"

	"github.com/proclock/proclock/internal/sqlapi"
)

// ErrPanic is matched by the error of a call into go-sqlite3 that
// panicked. The call's connection is closed, never reused, and the
// attempt fails with this error (docs/design.md, "Calls into SQLite").
var ErrPanic = errors.New("sqlitelock: go-sqlite3 panicked")

// panicError carries what go-sqlite3 panicked with.
type panicError struct{ value any }

func (e *panicError) Error() string {
	return fmt.Sprintf("sqlitelock: go-sqlite3 panicked: %v", e.value)
}

func (e *panicError) Is(target error) bool { return target == ErrPanic }

// exec runs sql on conn; a panic in go-sqlite3 is an error matching
// ErrPanic.
func exec(conn sqlapi.SQLConn, sql string) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = &panicError{value: r}
		}
	}()
	return conn.Exec(sql)
}

// closeConn closes conn; a panic in go-sqlite3 is an error matching
// ErrPanic.
func closeConn(conn sqlapi.SQLConn) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = &panicError{value: r}
		}
	}()
	return conn.Close()
}
