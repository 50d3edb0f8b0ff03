package sqlconn_test

import (
	"errors"
	"path/filepath"
	"testing"

	"github.com/ncruces/go-sqlite3"

	"github.com/proclock/proclock/internal/sqlapi"
	"github.com/proclock/proclock/internal/sqlconn"
)

// Conn is a sqlapi.SQLConn without importing platform.
var _ sqlapi.SQLConn = (*sqlconn.Conn)(nil)

// TestErrorsMatchSQLiteCode: a Conn's errors match sqlapi.SQLiteCode by
// their primary result code (and go-sqlite3's own codes, and nothing
// else), and say SQLite's words for it; Reserved and InTransaction follow
// the attached database's lock and the transaction.
func TestErrorsMatchSQLiteCode(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.db")
	attach := "ATTACH DATABASE 'file:" + filepath.ToSlash(path) + "?mode=rwc' AS lock"
	open := func() *sqlconn.Conn {
		t.Helper()
		c, err := sqlconn.OpenOS()
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		if err := c.Exec(attach); err != nil {
			t.Fatal(err)
		}
		return c
	}
	holder, other := open(), open()
	if holder.InTransaction() || holder.Reserved("lock") {
		t.Fatalf("before BEGIN: in a transaction %v, reserved %v; want neither", holder.InTransaction(), holder.Reserved("lock"))
	}
	if err := holder.Exec("CREATE TABLE lock.t(x); BEGIN IMMEDIATE"); err != nil {
		t.Fatal(err)
	}
	if !holder.InTransaction() || !holder.Reserved("lock") {
		t.Errorf("after BEGIN IMMEDIATE: in a transaction %v, reserved %v; want both", holder.InTransaction(), holder.Reserved("lock"))
	}
	err := other.Exec("BEGIN IMMEDIATE")
	switch {
	case !errors.Is(err, sqlapi.SQLiteBusy), !errors.Is(err, sqlite3.BUSY):
		t.Fatalf("a second writer: %v; want it to match sqlapi.SQLiteBusy and sqlite3.BUSY", err)
	case errors.Is(err, sqlapi.SQLiteNotADB), errors.Is(err, sqlapi.SQLiteCorrupt):
		t.Errorf("a busy error matches another code: %v", err)
	}
	words, ok := errors.AsType[interface {
		error
		SQLiteWords() string
	}](err)
	if !ok || words.SQLiteWords() != "database is locked" {
		t.Errorf("SQLite's words for a busy error: %v; want \"database is locked\"", words)
	}
}
