package fake

import (
	"fmt"
	"io/fs"
	"net/url"
	"sync/atomic"

	"github.com/ncruces/go-sqlite3"
	"github.com/ncruces/go-sqlite3/vfs"

	"github.com/proclock/proclock/platform"
)

// vfsCount numbers the VFSes of fake processes, so that every process of
// every world in this program registers its own name.
var vfsCount atomic.Uint64

// processSQLite is a process's platform.SQLite: real SQLite, whose files
// go through the process's VFS.
type processSQLite struct {
	p       *Process
	vfsName string
}

var _ platform.SQLite = (*processSQLite)(nil)

// sqlite returns the process's SQLite, its VFS registered on first use
// under a name of its own. SQLite finds a VFS by name whenever a
// connection opens or attaches a file, and a connection may outlive its
// process, so the name stays registered for the life of the program: a
// dead process's VFS answers ErrKilled.
func (p *Process) sqlite() *processSQLite {
	p.sqliteOnce.Do(func() {
		p.sqliteVal = &processSQLite{p: p, vfsName: fmt.Sprintf("proclock-fake-%d-pid%d", vfsCount.Add(1), p.pid)}
		vfs.Register(p.sqliteVal.vfsName, &processVFS{p: p})
	})
	return p.sqliteVal
}

// VFSName returns the name under which the process's SQLite VFS is
// registered (vfs.Find finds it), for a test that opens connections or
// files through it directly. It is the VFS Platform().SQLite opens with.
func (p *Process) VFSName() string { return p.sqlite().vfsName }

// Open opens a connection to the database at path, or to an in-memory
// database for ":memory:", with the process's VFS. The VFS is the
// connection's, so the databases it attaches go through it too.
func (s *processSQLite) Open(path string, flags sqlite3.OpenFlag) (*sqlite3.Conn, error) {
	if !s.p.Alive() {
		return nil, &fs.PathError{Op: "open", Path: path, Err: ErrKilled}
	}
	u := url.URL{Scheme: "file", OmitHost: true, Opaque: path, RawQuery: "vfs=" + s.vfsName}
	if path != ":memory:" && path != "" { // else in memory, or a temporary database
		// Escaped, so that a path is never taken for a query or a fragment.
		u.Opaque, u.Path = "", clean(path)
	}
	return sqlite3.OpenFlags(u.String(), flags|sqlite3.OPEN_URI)
}

// LocksBytes says that the process's SQLite locks files on the lock table
// its FS's byte-range locks use (platform.SQLiteByteLocks).
func (s *processSQLite) LocksBytes() {}
