package sqlitelock_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/ncruces/go-sqlite3/vfs"

	"github.com/proclock/proclock/internal/lockrec"
	"github.com/proclock/proclock/internal/sqlapi"
	"github.com/proclock/proclock/internal/sqlconn"
	"github.com/proclock/proclock/internal/sqlitelock"
	"github.com/proclock/proclock/lockfs"
	"github.com/proclock/proclock/platform"
)

// panicVFS is the OS's VFS but for FullPathname, which panics, as
// go-sqlite3's own does on a name over 1024 bytes.
type panicVFS struct{ vfs.VFSFilename }

func (panicVFS) FullPathname(string) (string, error) { panic("sqlite3: missing NUL terminator") }

const panicVFSName = "proclock-test-panics"

func init() { vfs.Register(panicVFSName, panicVFS{vfs.Find("os").(vfs.VFSFilename)}) }

// panicSQLite opens in-memory connections through panicVFS, so that every
// file attached to them goes through its FullPathname.
type panicSQLite struct{}

func (panicSQLite) LocksBytes() bool { return false }

func (panicSQLite) Connect() (sqlapi.SQLConn, error) { return sqlconn.OpenMemory(panicVFSName) }

// countedConns counts the connections given back.
type countedConns struct {
	conns
	put int
}

func (c *countedConns) Put(conn sqlapi.SQLConn) {
	c.put++
	c.conns.Put(conn)
}

// TestGoSQLite3PanicIsAnError: a panic inside go-sqlite3 (here in the VFS
// it calls back) comes out of Acquire and Probe as an error matching
// ErrPanic, in the caller's goroutine, and the connection it happened on
// is closed, never given back to be reused (docs/design.md).
func TestGoSQLite3PanicIsAnError(t *testing.T) {
	p := &platform.Platform{FS: lockfs.OS(), SQLite: panicSQLite{}}
	path := filepath.Join(t.TempDir(), "x.lock")
	cs := &countedConns{conns: conns{p.SQLite}}
	l, err := sqlitelock.Acquire(context.Background(), p, path, sqlitelock.Attempt{Retry: sqlitelock.RetryBusy, Conns: cs})
	if !errors.Is(err, sqlitelock.ErrPanic) || l != nil {
		t.Fatalf("Acquire through a VFS that panics: %v, %v; want an error matching ErrPanic", l, err)
	}
	if cs.put != 0 {
		t.Errorf("the connection that panicked was given back %d times; want closed", cs.put)
	}
	if _, err := os.Lstat(path + lockrec.MarkSuffix); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a failed attempt left a mark: %v", err)
	}
	if _, _, err := sqlitelock.Probe(p, cs, path); !errors.Is(err, sqlitelock.ErrPanic) {
		t.Errorf("Probe through a VFS that panics: %v; want an error matching ErrPanic", err)
	}
	if cs.put != 0 {
		t.Errorf("the probe's connection that panicked was given back; want closed")
	}
}
