package sqlitelock_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ncruces/go-sqlite3"

	"github.com/proclock/proclock/internal/lockrec"
	"github.com/proclock/proclock/internal/locktest/sqlpath"
	"github.com/proclock/proclock/internal/sqlitelock"
	"github.com/proclock/proclock/lockfs"
	"github.com/proclock/proclock/platform"
)

// rangedPlatforms returns a native platform whose SQLite lock is taken as
// byte-range locks without a connection (ranged), and one over the same
// SQLite hiding that power, which takes it through SQL (sql); it skips
// where this OS's SQLite has no such power.
func rangedPlatforms(t *testing.T) (ranged, sql *platform.Platform) {
	t.Helper()
	native := platform.Native().SQLite
	if native == nil || !native.LocksBytes() {
		t.Skip("this OS's SQLite does not lock with the FS's byte-range locks (platform.SQLite.LocksBytes): every lock goes through SQL")
	}
	return &platform.Platform{FS: lockfs.OS(), SQLite: native}, &platform.Platform{FS: lockfs.OS(), SQLite: sqlpath.Native()}
}

// tryOnce makes one attempt, without the flock(2) lock beside SQLite's:
// only SQLite's locks keep others out.
func tryOnce(p *platform.Platform, path string) (*sqlitelock.Lock, error) {
	return sqlitelock.Acquire(context.Background(), p, path, sqlitelock.Attempt{Retry: sqlitelock.RetryNone, Conns: sqlitelock.NewConnCache(1).For(p.SQLite), NoFlock: true})
}

// TestRangedAndSQLExcludeEachOther: a lock taken as byte-range locks and
// one taken through SQL are the same kernel locks, so each keeps the other
// out, both ways, and Probe by either way sees either holder; once the
// holder lets go, the other way takes the lock.
func TestRangedAndSQLExcludeEachOther(t *testing.T) {
	ranged, sql := rangedPlatforms(t)
	for _, c := range []struct {
		name          string
		holder, other *platform.Platform
	}{{"ranged holds", ranged, sql}, {"sql holds", sql, ranged}} {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "x.lock")
			l, err := tryOnce(c.holder, path)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := tryOnce(c.other, path); !errors.Is(err, lockrec.ErrHeld) {
				t.Fatalf("the other way's attempt beside the holder: %v; want held", err)
			}
			for _, p := range []*platform.Platform{ranged, sql} {
				if st, _, err := sqlitelock.Probe(p, sqlitelock.NewConnCache(1).For(p.SQLite), path); err != nil || st != lockrec.StateHeld {
					t.Errorf("Probe beside the holder: %v, %v; want held", st, err)
				}
			}
			if err := l.Release(); err != nil {
				t.Fatal(err)
			}
			l, err = tryOnce(c.other, path)
			if err != nil {
				t.Fatalf("the other way's attempt after the release: %v", err)
			}
			l.Release()
		})
	}
}

// TestRangedAgainstConnections: a lock taken as byte-range locks keeps an
// ordinary SQLite connection to the file from reading it or writing it,
// and a connection's own locks keep the lock from being taken: its
// exclusive lock (Probe: held), and a reader's shared lock (Probe: free,
// as a read-only look finds it; an attempt waits for the reader).
func TestRangedAgainstConnections(t *testing.T) {
	ranged, _ := rangedPlatforms(t)
	path := filepath.Join(t.TempDir(), "x.lock")
	l, err := tryOnce(ranged, path)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := sqlite3.OpenFlags(path, sqlite3.OPEN_READWRITE)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if err := conn.Exec("SELECT count(*) FROM sqlite_schema"); !errors.Is(err, sqlite3.BUSY) {
		t.Errorf("a connection's read beside the lock: %v; want SQLITE_BUSY", err)
	}
	if err := conn.Exec("BEGIN EXCLUSIVE"); !errors.Is(err, sqlite3.BUSY) {
		t.Errorf("a connection's BEGIN EXCLUSIVE beside the lock: %v; want SQLITE_BUSY", err)
	}
	if err := conn.Exec("BEGIN IMMEDIATE"); !errors.Is(err, sqlite3.BUSY) {
		t.Errorf("a connection's write transaction (BEGIN IMMEDIATE) beside the lock: %v; want SQLITE_BUSY", err)
	}
	if err := l.Release(); err != nil {
		t.Fatal(err)
	}

	probe := func() lockrec.State {
		t.Helper()
		st, _, err := sqlitelock.Probe(ranged, nil, path)
		if err != nil {
			t.Fatal(err)
		}
		return st
	}
	if err := conn.Exec("BEGIN EXCLUSIVE"); err != nil {
		t.Fatalf("a connection's BEGIN EXCLUSIVE after the release: %v", err)
	}
	if st := probe(); st != lockrec.StateHeld {
		t.Errorf("Probe beside a connection's exclusive lock: %v; want held", st)
	}
	if _, err := tryOnce(ranged, path); !errors.Is(err, lockrec.ErrHeld) {
		t.Errorf("an attempt beside a connection's exclusive lock: %v; want held", err)
	}
	if err := conn.Exec("ROLLBACK; BEGIN IMMEDIATE"); err != nil {
		t.Fatal(err)
	}
	if st := probe(); st != lockrec.StateHeld {
		t.Errorf("Probe beside a connection's write transaction (its reserved lock): %v; want held", st)
	}
	if _, err := tryOnce(ranged, path); !errors.Is(err, lockrec.ErrHeld) {
		t.Errorf("an attempt beside a connection's write transaction: %v; want held", err)
	}
	if err := conn.Exec("ROLLBACK; BEGIN; SELECT count(*) FROM sqlite_schema"); err != nil {
		t.Fatal(err)
	}
	if st := probe(); st != lockrec.StateFree {
		t.Errorf("Probe beside a reader's shared lock: %v; want free", st)
	}
	if _, err := tryOnce(ranged, path); !errors.Is(err, lockrec.ErrHeld) {
		t.Errorf("an attempt beside a reader's shared lock: %v; want held (a writer waits for readers)", err)
	}
	if err := conn.Exec("COMMIT"); err != nil {
		t.Fatal(err)
	}
	l, err = tryOnce(ranged, path)
	if err != nil {
		t.Fatalf("an attempt once the reader is gone: %v", err)
	}
	l.Release()
}

// pySQLite is a python3 program on SQLite's own C library, which locks
// with POSIX fcntl locks where go-sqlite3 takes OFD locks: it opens the
// database at argv[1] with no busy timeout, runs the statements argv[2]
// (a transaction it leaves open), prints "ok" or the error, and keeps its
// connection (and its locks) until its input ends.
const pySQLite = `
import sqlite3, sys
c = sqlite3.connect(sys.argv[1], timeout=0, isolation_level=None)
try:
    c.executescript(sys.argv[2])
    print("ok", flush=True)
except sqlite3.Error as e:
    print(e, flush=True)
sys.stdin.read()
`

// TestRangedAgainstSQLiteC: the byte-range lock and the locks SQLite's C
// library takes in another process keep each other out, both ways: its
// exclusive lock and its write transaction's reserved one (held, to an
// attempt and to Probe) and a reader's shared lock (an attempt waits for
// it, as a connection's would; Probe, as a read-only look, finds it free).
func TestRangedAgainstSQLiteC(t *testing.T) {
	ranged, _ := rangedPlatforms(t)
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("python3 (with its sqlite3 module, SQLite's C library) is not installed")
	}
	for _, c := range []struct {
		name, sql string
		probe     lockrec.State // what Probe finds beside it
	}{
		{"exclusive", "BEGIN EXCLUSIVE", lockrec.StateHeld},
		{"write transaction", "BEGIN IMMEDIATE", lockrec.StateHeld},
		{"write", "BEGIN; CREATE TABLE t(x)", lockrec.StateHeld},
		{"read", "BEGIN; SELECT count(*) FROM sqlite_schema", lockrec.StateFree},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "x.lock")
			l, err := tryOnce(ranged, path)
			if err != nil {
				t.Fatal(err)
			}
			answer, stop := runPySQLite(t, path, c.sql)
			stop()
			if answer != "database is locked" {
				t.Errorf("SQLite's C library's %q beside the lock: %q; want \"database is locked\"", c.sql, answer)
			}
			l.Release()
			if c.name == "write" {
				return // it would write the lock's database: only the refusal is of interest
			}

			answer, stop = runPySQLite(t, path, c.sql)
			defer stop()
			if answer != "ok" {
				t.Fatalf("SQLite's C library's %q on the free lock: %q", c.sql, answer)
			}
			if _, err := tryOnce(ranged, path); !errors.Is(err, lockrec.ErrHeld) {
				t.Errorf("an attempt beside SQLite's C library's %q: %v; want held", c.sql, err)
			}
			if st, _, err := sqlitelock.Probe(ranged, nil, path); err != nil || st != c.probe {
				t.Errorf("Probe beside SQLite's C library's %q: %v, %v; want %v", c.sql, st, err, c.probe)
			}
		})
	}
}

// runPySQLite runs pySQLite on path and sql in another process and returns
// its answer, and stop, which ends it (and its locks).
func runPySQLite(t *testing.T, path, sql string) (answer string, stop func()) {
	t.Helper()
	cmd := exec.Command("python3", "-c", pySQLite, path, sql)
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		in.Close()
		cmd.Wait()
		t.Fatalf("python3: %v", err)
	}
	return strings.TrimSpace(line), func() { in.Close(); cmd.Wait() }
}

// TestRangedRunningProgram: a program that is running cannot be opened
// for writing (ETXTBSY); an attempt at its path says what it is, not a
// lock file, as a read-only look finds it, and leaves it as it was.
func TestRangedRunningProgram(t *testing.T) {
	ranged, _ := rangedPlatforms(t)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	before, err := os.ReadFile(exe)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tryOnce(ranged, exe); !errors.Is(err, lockrec.ErrNotLockFile) {
		t.Errorf("an attempt at this running test binary: %v; want not a lock file", err)
	}
	if after, err := os.ReadFile(exe); err != nil || !bytes.Equal(after, before) {
		t.Errorf("the binary changed (%v)", err)
	}
}
