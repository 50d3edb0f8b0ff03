//go:build linux

package proclock_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/ncruces/go-sqlite3"

	"github.com/proclock/proclock"
	"github.com/proclock/proclock/internal/lockrec"
	"github.com/proclock/proclock/internal/locktest/sqlpath"
	"github.com/proclock/proclock/internal/sqlapi"
	"github.com/proclock/proclock/platform"
)

// A user's database in WAL mode keeps its tables in "-wal" until a
// checkpoint: the main file is one page, header only. Only proclock's own
// empty database is a SQLite lock's file: this one is someone's data,
// never changed or removed (the first version of the protocol took any
// one-page database for a lock's).
func TestWALDatabaseWithTablesIsNotALockFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "app.db")
	db, err := sqlite3.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.Exec(`PRAGMA journal_mode=WAL; CREATE TABLE users(name TEXT); INSERT INTO users VALUES ('alice');`); err != nil {
		t.Fatal(err)
	}
	before, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("main file %d bytes, kind %v; wal present: %v", len(before), lockrec.Classify(before), exists(path+"-wal"))

	pl := platform.Native().WithoutSQLite() // a process of the file mechanism (a wasm guest, dotlk build)
	l, err := proclock.Acquire(context.Background(), pl, path, proclock.Options{})
	if err == nil {
		l.Release()
	}
	after, _ := os.ReadFile(path)
	if !errors.Is(err, lockrec.ErrNotLockFile) || string(after) != string(before) {
		t.Fatalf("Acquire on a user's WAL database with a table: err %v; file now %d bytes (exists %v), was %d: want ErrNotLockFile and the file untouched",
			err, len(after), exists(path), len(before))
	}
}

// A text file whose whole content is a start of SQLite's magic ("SQLite")
// is not a SQLite lock's database (the first version took it for one).
func TestTextPrefixOfMagicIsNotALockFile(t *testing.T) {
	for _, text := range []string{"S", "SQL", "SQLite"} {
		if k := lockrec.Classify([]byte(text)); k != lockrec.Foreign && k != lockrec.Torn {
			t.Errorf("Classify(%q) = %v; a user's text file, want foreign (or at most torn: held 30 s, not free)", text, k)
		}
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "notes")
	if err := os.WriteFile(path, []byte("SQLite"), 0o644); err != nil {
		t.Fatal(err)
	}
	pl := platform.Native().WithoutSQLite()
	l, err := proclock.Acquire(context.Background(), pl, path, proclock.Options{})
	if err == nil {
		l.Release()
	}
	if b, _ := os.ReadFile(path); string(b) != "SQLite" {
		t.Fatalf("a text file %q: Acquire err %v, file now %q, exists %v", "SQLite", err, b, exists(path))
	}
}

func exists(p string) bool { _, err := os.Lstat(p); return err == nil }

// sliceSQLite is a platform.SQLite whose type cannot be compared (a
// slice field): a user's wrapper, say, of the SQL path.
type sliceSQLite struct{ _ []string }

func (s sliceSQLite) LocksBytes() bool { return false }

func (s sliceSQLite) Connect() (sqlapi.SQLConn, error) {
	return sqlpath.Native().(sqlapi.SQLConnector).Connect()
}

// The idle connection cache compares platform.SQLite values with ==: a
// SQLite value whose type cannot be compared is refused with an error, as
// an FS's is, instead of panicking on the second acquisition.
func TestUncomparableSQLiteDoesNotPanic(t *testing.T) {
	path := filepath.Join(t.TempDir(), "app.lock")
	pl := platform.Native()
	pl.SQLite = sliceSQLite{}
	defer func() {
		if r := recover(); r != nil {
			t.Fatalf("Acquire/Release with an uncomparable platform.SQLite panicked: %v", r)
		}
	}()
	for range 2 {
		l, err := proclock.Acquire(context.Background(), pl, path, proclock.Options{})
		if err != nil {
			t.Logf("acquire: %v (an error is fine; a panic is not)", err)
			continue
		}
		l.Release()
	}
}
