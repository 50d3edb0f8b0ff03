package proclock

import (
	"fmt"
	"sync"

	"github.com/ncruces/go-sqlite3"

	"github.com/proclock/proclock/platform"
	"github.com/proclock/proclock/sqlitelock"
)

// maxIdleConns is how many idle connections are kept in all, across
// SQLite values. Each costs about 300 KB; opening one costs far more time
// (about 170 µs) than attaching a lock's file to it, which is what an
// acquisition does. The cap is global so that platforms that come and go
// (a fake world's processes) never pile connections up.
const maxIdleConns = 4

// idleConns keeps a few in-memory connections with nothing attached: no
// file, no lock. An acquisition borrows one, attaches the lock's database
// to it, and gives it back after detaching. (They are not opened with
// OPEN_MEMORY: databases attached to such a connection would be in memory
// too.)
var idleConns connCache

type idleConn struct {
	sq   platform.SQLite
	conn *sqlite3.Conn
}

type connCache struct {
	mu   sync.Mutex
	idle []idleConn // oldest first
}

// take returns an idle connection of sq, most recent first, or nil.
func (c *connCache) take(sq platform.SQLite) *sqlite3.Conn {
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
func (c *connCache) keep(sq platform.SQLite, conn *sqlite3.Conn) *sqlite3.Conn {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.idle = append(c.idle, idleConn{sq, conn})
	if len(c.idle) <= maxIdleConns {
		return nil
	}
	old := c.idle[0].conn
	c.idle = append(c.idle[:0], c.idle[1:]...)
	return old
}

// connPool lends connections of one SQLite value (sqlitelock.Conns).
type connPool struct{ sq platform.SQLite }

// Get lends an idle connection, or opens one; a panic in go-sqlite3 is an
// error matching sqlitelock.ErrPanic.
func (p connPool) Get() (conn *sqlite3.Conn, err error) {
	if conn := idleConns.take(p.sq); conn != nil {
		return conn, nil
	}
	defer func() {
		if r := recover(); r != nil {
			conn, err = nil, fmt.Errorf("%w: opening a connection: %v", sqlitelock.ErrPanic, r)
		}
	}()
	return p.sq.Open(":memory:", sqlite3.OPEN_READWRITE|sqlite3.OPEN_CREATE|sqlite3.OPEN_URI)
}

func (p connPool) Put(conn *sqlite3.Conn) {
	defer func() { recover() }()       // a connection that fails to close is gone either way
	idleConns.keep(p.sq, conn).Close() // closing a nil Conn does nothing
}
