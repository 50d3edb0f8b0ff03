package sqlitelock

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"
	"sync"

	"github.com/proclock/proclock/internal/lockrec"
	"github.com/proclock/proclock/internal/sqlapi"
	"github.com/proclock/proclock/platform"
)

// The SQL path: the lock's database is attached to a borrowed connection
// as schema, and lockSQL takes the lock, without a journal, until the
// database is detached. Connections are in exclusive locking mode
// (setupSQL), so an attached file keeps the shared lock its schema was
// read under, which spares BEGIN EXCLUSIVE a second round of lock calls.
const (
	schema   = "lock"
	lockSQL  = `PRAGMA lock.journal_mode=OFF; BEGIN EXCLUSIVE;`
	setupSQL = `PRAGMA locking_mode=EXCLUSIVE`
)

// Conns lends in-memory connections of the platform's SQLite, in
// exclusive locking mode (setupSQL), to attach a lock's database to.
type Conns interface {
	Get() (sqlapi.SQLConn, error)
	// Put takes back a connection with nothing attached.
	Put(sqlapi.SQLConn)
}

// ConnCache keeps a few idle connections, since opening one costs far
// more than attaching a file to it. The cap is over all SQLite values, so
// that platforms that come and go never pile connections up.
type ConnCache struct {
	max  int
	mu   sync.Mutex
	idle []idleConn // oldest first
}

type idleConn struct {
	sq   platform.SQLite
	conn sqlapi.SQLConn
}

// NewConnCache returns a cache that keeps at most max idle connections.
func NewConnCache(max int) *ConnCache { return &ConnCache{max: max} }

// For returns the Conns that lends connections of sq (comparable: it keys
// the cache), kept in c between uses.
func (c *ConnCache) For(sq platform.SQLite) Conns { return cachedConns{c, sq} }

// take returns an idle connection of sq, most recent first, or nil.
func (c *ConnCache) take(sq platform.SQLite) sqlapi.SQLConn {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i := len(c.idle) - 1; i >= 0; i-- {
		if c.idle[i].sq == sq {
			conn := c.idle[i].conn
			c.idle = append(c.idle[:i], c.idle[i+1:]...)
			return conn
		}
	}
	return nil
}

// keep adds conn to the idle ones and returns the oldest it evicted, if any.
func (c *ConnCache) keep(sq platform.SQLite, conn sqlapi.SQLConn) sqlapi.SQLConn {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.idle = append(c.idle, idleConn{sq, conn})
	if len(c.idle) <= c.max {
		return nil
	}
	old := c.idle[0].conn
	c.idle = append(c.idle[:0], c.idle[1:]...)
	return old
}

// cachedConns lends connections of one SQLite value through a ConnCache.
type cachedConns struct {
	c  *ConnCache
	sq platform.SQLite
}

// Get lends an idle connection, or opens one; a panic in go-sqlite3 is an
// error matching ErrPanic.
func (p cachedConns) Get() (conn sqlapi.SQLConn, err error) {
	if conn := p.c.take(p.sq); conn != nil {
		return conn, nil
	}
	defer func() {
		if r := recover(); r != nil {
			conn, err = nil, fmt.Errorf("%w: opening a connection: %v", ErrPanic, r)
		}
	}()
	sc, ok := p.sq.(sqlapi.SQLConnector)
	if !ok {
		return nil, ErrNoConnections
	}
	if conn, err = sc.Connect(); err != nil {
		return nil, err
	}
	if err := exec(conn, setupSQL); err != nil {
		closeConn(conn)
		return nil, err
	}
	return conn, nil
}

// Put takes back a connection with nothing attached.
func (p cachedConns) Put(conn sqlapi.SQLConn) {
	defer func() { recover() }() // a connection that fails to close is gone either way
	p.c.keep(p.sq, conn).Close() // closing a nil Conn does nothing
}

// ErrNoConnections is matched by the error of an attempt or a probe that
// has no way to take SQLite's lock: no connections, no byte-range locks.
var ErrNoConnections = errors.New("sqlitelock: no way to take SQLite's lock: the platform's SQLite opens no connections (it has no Connect method)")

// sqliteName is the name SQLite is to open the file at path by, within its
// pathname limit (sqlapi.SQLiteNamer), and the end of the name's life. It
// fails for op when p can take no lock through SQL (ErrNoConnections).
func sqliteName(p *platform.Platform, path, op string) (string, func(), error) {
	if _, ok := p.SQLite.(sqlapi.SQLConnector); !ok {
		err := ErrNoConnections
		if p.SQLite.LocksBytes() {
			err = fmt.Errorf("%w, and its FS (%T) has no byte-range locks (lockfs.RangeLocker; a wrapper of lockfs.OS must forward them), which its SQLite locks with", ErrNoConnections, p.FS)
		}
		return "", nil, &fs.PathError{Op: op, Path: path, Err: err}
	}
	name, done, err := path, func() {}, error(nil)
	if n, ok := p.SQLite.(sqlapi.SQLiteNamer); ok {
		name, done, err = n.SQLiteName(path)
	} else if len(path) > sqlapi.MaxSQLitePath {
		err = sqlapi.ErrSQLitePathTooLong
	}
	if errors.Is(err, sqlapi.ErrSQLitePathTooLong) {
		err = &lockrec.TooLongError{Why: fmt.Sprintf(
			"the path is %d bytes, and SQLite takes at most %d (made absolute) and cannot be given a shorter name for it on this system; the file mechanism takes it",
			len(path), sqlapi.MaxSQLitePath)}
	}
	return name, done, err
}

// attachSQL attaches the database SQLite knows by name, never creating it
// (pinFile does). Attaching reads the schema: BUSY against a holder.
func attachSQL(name string, readOnly bool) string {
	uri := fileURI(name, readOnly)
	return "ATTACH DATABASE '" + strings.ReplaceAll(uri, "'", "''") + "' AS " + schema
}

// uriEscaper escapes what SQLite's URI filenames take for syntax.
var uriEscaper = strings.NewReplacer("%", "%25", "?", "%3F", "#", "%23")

// fileURI names path as a SQLite URI filename, whose path the VFS opens
// as it is: "file:C:/x" on windows, "file:////host/share" for UNC.
func fileURI(path string, readOnly bool) string {
	p := filepath.ToSlash(path)
	if strings.HasPrefix(p, "/") {
		p = "//" + p // an empty authority, before an absolute path
	}
	mode := "?mode=rw"
	if readOnly {
		mode = "?mode=ro"
	}
	return "file:" + uriEscaper.Replace(p) + mode
}

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
