// Package fakesql gives the processes of a fake world SQLite connections:
// real SQLite (github.com/ncruces/go-sqlite3) over the fake filesystem,
// through a VFS of each process's own whose locks are the world's lock
// table, the one the fake FS's byte-range locks use. Hooks see its file
// operations with the process's pid, temporary files stay in memory, a
// conflict is SQLITE_BUSY at once, and Kill drops every lock of the
// process in one step. Package fake alone compiles no SQLite engine.
package fakesql

import (
	"fmt"
	"io/fs"
	"net/url"
	"sync"

	"github.com/ncruces/go-sqlite3"
	"github.com/ncruces/go-sqlite3/vfs"

	"github.com/proclock/proclock/fake"
	"github.com/proclock/proclock/fake/internal/sqlfile"
	"github.com/proclock/proclock/internal/sqlapi"
	"github.com/proclock/proclock/internal/sqlconn"
	"github.com/proclock/proclock/platform"
)

// Each process registers a VFS on first use, for the life of the program
// (SQLite finds a VFS by name whenever a connection opens a file, and a
// connection may outlive its process), which keeps the process, so that
// its address names it.
var vfsMu sync.Mutex

func vfsName(p *fake.Process) string {
	name := fmt.Sprintf("proclock-fake-%p-pid%d", p, p.PID())
	vfsMu.Lock()
	defer vfsMu.Unlock()
	if vfs.Find(name) == nil {
		vfs.Register(name, &processVFS{p.Platform().FS.(sqlfile.FS)})
	}
	return name
}

// SQLPlatform returns p.Platform() whose SQLite takes its lock through SQL
// on a connection of p's (sqlapi.SQLConnector), as where the OS's SQLite
// is not known to lock bytes (darwin, windows, the BSDs). It takes the
// same locks on the same table as p.Platform()'s, so the two exclude each
// other.
func SQLPlatform(p *fake.Process) *platform.Platform {
	pl := p.Platform()
	pl.SQLite = viaSQL{p}
	return pl
}

// Open opens a connection of p's to the database at path (or ":memory:")
// through p's VFS, which what it attaches goes through too. A killed
// process's open fails with an error matching fake.ErrKilled.
func Open(p *fake.Process, path string, flags sqlite3.OpenFlag) (*sqlite3.Conn, error) {
	if !p.Alive() {
		return nil, &fs.PathError{Op: "open", Path: path, Err: fake.ErrKilled}
	}
	u := url.URL{Scheme: "file", OmitHost: true, Opaque: path, RawQuery: "vfs=" + vfsName(p)}
	if path != ":memory:" && path != "" { // else in memory, or a temporary database
		// Escaped, so that a path is never taken for a query or a fragment.
		u.Opaque, u.Path = "", sqlfile.Clean(path)
	}
	return sqlite3.OpenFlags(u.String(), flags|sqlite3.OPEN_URI)
}

type viaSQL struct{ p *fake.Process }

var _ sqlapi.SQLConnector = viaSQL{}

func (viaSQL) LocksBytes() bool { return false }

func (s viaSQL) Connect() (sqlapi.SQLConn, error) {
	if !s.p.Alive() {
		return nil, &fs.PathError{Op: "open", Path: ":memory:", Err: fake.ErrKilled}
	}
	c, err := sqlconn.OpenMemory(vfsName(s.p))
	if err != nil {
		return nil, err
	}
	return c, nil
}
