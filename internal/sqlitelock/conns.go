package sqlitelock

import (
	"errors"
	"fmt"
	"sync"

	"github.com/proclock/proclock/internal/sqlapi"
	"github.com/proclock/proclock/platform"
)

// ConnCache keeps a few idle connections, each an in-memory database with
// nothing attached (no file, no lock), for the Conns of any number of
// SQLite values. Opening a connection costs far more (a SQLite instance of
// its own: about 150 µs) than attaching a lock's file to one, which is
// what an attempt does. The cap is over all SQLite values, so that
// platforms that come and go (a fake world's processes) never pile
// connections up. The cache is plumbing: the root package holds the one
// instance (docs/design.md: module state lives there).
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

// For returns the Conns that lends connections of sq, kept in c between
// uses. sq must be comparable (a pointer, say): it keys the cache.
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

// setupSQL is run once on each connection the cache opens. In exclusive
// locking mode, set for the connection's databases to come, a file
// attached keeps the shared lock its schema was read under, so the
// attempt's BEGIN EXCLUSIVE goes on from it instead of taking a shared
// lock again (a second round of lock calls and header reads, and SQLite's
// check of its cache). An attempt on such a connection never waits while
// it holds only that shared lock (take).
const setupSQL = `PRAGMA locking_mode=EXCLUSIVE`

// setup prepares a connection the cache opened: setupSQL.
func setup(conn sqlapi.SQLConn) error { return exec(conn, setupSQL) }

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
	conn, err = sc.Connect()
	if err != nil {
		return nil, err
	}
	if err := setup(conn); err != nil {
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
// has no way to take SQLite's lock: its platform's SQLite opens no
// connections (sqlapi.SQLConnector), and its locks are not byte-range
// locks of the platform's FS (platform.SQLite.LocksBytes and
// lockfs.RangeLocker), or the FS hides them (a wrapper of lockfs.OS that
// does not forward RangeLocker).
var ErrNoConnections = errors.New("sqlitelock: no way to take SQLite's lock: the platform's SQLite opens no connections (it has no Connect method)")

// noSQLPath is nil when p can take SQLite's lock through SQL, else an
// error matching ErrNoConnections that says what is missing.
func noSQLPath(p *platform.Platform) error {
	if _, ok := p.SQLite.(sqlapi.SQLConnector); ok {
		return nil
	}
	if p.SQLite.LocksBytes() {
		return fmt.Errorf("%w, and its FS (%T) has no byte-range locks (lockfs.RangeLocker; a wrapper of lockfs.OS must forward them), which its SQLite locks with", ErrNoConnections, p.FS)
	}
	return ErrNoConnections
}

// exclusiveByDefault marks Conns whose connections are in exclusive
// locking mode for every database attached (setupSQL).
func (cachedConns) exclusiveByDefault() {}

// exclusiveByDefault tells whether conns lends connections set up by
// setupSQL. Others (a caller's own Conns) get the locking mode set by the
// attempt itself, after BEGIN EXCLUSIVE.
func exclusiveByDefault(conns Conns) bool {
	_, ok := conns.(interface{ exclusiveByDefault() })
	return ok
}
