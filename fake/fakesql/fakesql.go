// Package fakesql gives the processes of a fake world SQLite connections:
// real SQLite (github.com/ncruces/go-sqlite3) over the fake filesystem,
// through a VFS of each process's own, whose locks are the world's lock
// table, the one the fake FS's byte-range locks use. Hooks see its file
// operations with the process's pid, a swapped inode is what it opens
// next, temporary files stay in memory, a conflict is SQLITE_BUSY at once
// (never a wait), and Kill drops every lock of the process in one step.
//
// Package fake alone compiles no SQLite engine: its processes' SQLite
// takes SQLite's locks as byte-range locks, as proclock does on linux,
// which is all a hermetic test of proclock needs. A test imports fakesql
// to open connections of its own beside a lock (Open), or to run the SQL
// path of the SQLite mechanism, as on darwin, windows and the BSDs
// (ViaSQL).
package fakesql

import (
	"fmt"
	"io/fs"
	"net/url"
	"path"
	"path/filepath"
	"sync"
	"sync/atomic"

	"github.com/ncruces/go-sqlite3"
	"github.com/ncruces/go-sqlite3/vfs"

	"github.com/proclock/proclock/fake"
	"github.com/proclock/proclock/fake/internal/sqlfile"
	"github.com/proclock/proclock/internal/sqlapi"
	"github.com/proclock/proclock/internal/sqlconn"
	"github.com/proclock/proclock/platform"
)

// vfsCount numbers the VFSes of fake processes, so that every process of
// every world in this program registers its own name.
var vfsCount atomic.Uint64

// procs holds each process's SQLite, made on first use. A VFS stays
// registered for the life of the program (SQLite finds a VFS by name
// whenever a connection opens or attaches a file, and a connection may
// outlive its process), and so does this.
var procs sync.Map // *fake.Process -> *procSQL

// procSQL is what fakesql keeps of a process: its VFS's name and its two
// SQLite values.
type procSQL struct {
	p       *fake.Process
	vfsName string
	both    *withConns
	sqlOnly *viaSQL
}

func of(p *fake.Process) *procSQL {
	if s, ok := procs.Load(p); ok {
		return s.(*procSQL)
	}
	s := &procSQL{p: p, vfsName: fmt.Sprintf("proclock-fake-%d-pid%d", vfsCount.Add(1), p.PID())}
	s.both, s.sqlOnly = &withConns{s}, &viaSQL{s}
	if old, loaded := procs.LoadOrStore(p, s); loaded {
		return old.(*procSQL)
	}
	vfs.Register(s.vfsName, &processVFS{p: p, fsys: p.FS().(sqlfile.FS)})
	return s
}

// SQLite returns the process's SQLite with connections
// (sqlapi.SQLConnector) through its VFS. Its locks are the FS's
// byte-range locks (LocksBytes), so the SQLite mechanism still takes them
// without a connection; the connections are for a test's own. The same
// value every call.
func SQLite(p *fake.Process) platform.SQLite { return of(p).both }

// ViaSQL returns the process's SQLite for the SQL path: connections, and
// LocksBytes false, so that the SQLite mechanism takes its lock through
// SQL on a connection, as where the OS's SQLite is not known to lock
// bytes (darwin, windows, the BSDs) or as an older proclock did. Both ways
// take the same locks on the same table, so they exclude each other. The
// same value every call.
func ViaSQL(p *fake.Process) platform.SQLite { return of(p).sqlOnly }

// Platform returns p.Platform() with SQLite(p).
func Platform(p *fake.Process) *platform.Platform {
	pl := p.Platform()
	pl.SQLite = SQLite(p)
	return pl
}

// SQLPlatform returns p.Platform() with ViaSQL(p).
func SQLPlatform(p *fake.Process) *platform.Platform {
	pl := p.Platform()
	pl.SQLite = ViaSQL(p)
	return pl
}

// VFSName returns the name under which the process's SQLite VFS is
// registered (vfs.Find finds it), for a test that opens connections or
// files through it directly.
func VFSName(p *fake.Process) string { return of(p).vfsName }

// Open opens a connection of the process to the database at path, or to
// an in-memory database for ":memory:", through its VFS, which the
// databases the connection attaches go through too. A killed process's
// open fails with an error matching fake.ErrKilled.
func Open(p *fake.Process, path string, flags sqlite3.OpenFlag) (*sqlite3.Conn, error) {
	if !p.Alive() {
		return nil, &fs.PathError{Op: "open", Path: path, Err: fake.ErrKilled}
	}
	u := url.URL{Scheme: "file", OmitHost: true, Opaque: path, RawQuery: "vfs=" + of(p).vfsName}
	if path != ":memory:" && path != "" { // else in memory, or a temporary database
		// Escaped, so that a path is never taken for a query or a fragment.
		u.Opaque, u.Path = "", clean(path)
	}
	return sqlite3.OpenFlags(u.String(), flags|sqlite3.OPEN_URI)
}

// clean is the absolute path the fake FS walks for name.
func clean(name string) string {
	name = name[len(filepath.VolumeName(name)):]
	return path.Clean("/" + filepath.ToSlash(name))
}

// withConns is a process's SQLite with connections (SQLite).
type withConns struct{ s *procSQL }

func (*withConns) LocksBytes() bool { return true }

func (c *withConns) Connect() (sqlapi.SQLConn, error) { return c.s.connect() }

// viaSQL is a process's SQLite for the SQL path (ViaSQL).
type viaSQL struct{ s *procSQL }

func (*viaSQL) LocksBytes() bool { return false }

func (c *viaSQL) Connect() (sqlapi.SQLConn, error) { return c.s.connect() }

var (
	_ sqlapi.SQLConnector = (*withConns)(nil)
	_ sqlapi.SQLConnector = (*viaSQL)(nil)
)

func (s *procSQL) connect() (sqlapi.SQLConn, error) {
	if !s.p.Alive() {
		return nil, &fs.PathError{Op: "open", Path: ":memory:", Err: fake.ErrKilled}
	}
	c, err := sqlconn.OpenMemory(s.vfsName)
	if err != nil {
		return nil, err
	}
	return c, nil
}
