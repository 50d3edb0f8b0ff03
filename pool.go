package proclock

import (
	"sync"

	"github.com/ncruces/go-sqlite3"

	"github.com/proclock/proclock/platform"
)

// idleConns is how many idle connections are kept per SQLite value. Each
// costs about 300 KB; opening one costs far more time than attaching a
// lock's file to it, which is what an acquisition does.
const idleConns = 2

// connPools keeps, per platform SQLite value, a few in-memory connections
// with nothing attached: no file, no lock. (Not opened with OPEN_MEMORY:
// databases attached to such a connection would be in memory too.) An acquisition borrows one,
// attaches the lock's database to it, and gives it back after detaching.
var connPools = poolTable{m: map[platform.SQLite]*connPool{}}

type poolTable struct {
	mu sync.Mutex
	m  map[platform.SQLite]*connPool
}

// of returns the pool of sq's connections.
func (t *poolTable) of(sq platform.SQLite) *connPool {
	t.mu.Lock()
	defer t.mu.Unlock()
	p := t.m[sq]
	if p == nil {
		p = &connPool{sq: sq}
		t.m[sq] = p
	}
	return p
}

// connPool lends connections of one SQLite value (sqlitelock.Conns).
type connPool struct {
	sq   platform.SQLite
	mu   sync.Mutex
	idle []*sqlite3.Conn
}

func (p *connPool) Get() (*sqlite3.Conn, error) {
	p.mu.Lock()
	if n := len(p.idle); n > 0 {
		c := p.idle[n-1]
		p.idle = p.idle[:n-1]
		p.mu.Unlock()
		return c, nil
	}
	p.mu.Unlock()
	return p.sq.Open(":memory:", sqlite3.OPEN_READWRITE|sqlite3.OPEN_CREATE|sqlite3.OPEN_URI)
}

func (p *connPool) Put(c *sqlite3.Conn) {
	p.mu.Lock()
	if len(p.idle) < idleConns {
		p.idle = append(p.idle, c)
		c = nil
	}
	p.mu.Unlock()
	c.Close() // closing a nil Conn does nothing
}
