package sqlitelock_test

import (
	"context"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/ncruces/go-sqlite3"

	"github.com/proclock/proclock/internal/locktest/sqlpath"
	"github.com/proclock/proclock/internal/sqlapi"
	"github.com/proclock/proclock/internal/sqlconn"
	"github.com/proclock/proclock/internal/sqlitelock"
	"github.com/proclock/proclock/lockfs"
	"github.com/proclock/proclock/platform"
)

// gateClock is a virtual clock whose first Sleep reports on sleeping and
// waits for wake; later ones pass at once. Each moves the clock on by d.
type gateClock struct {
	mu       sync.Mutex
	now      time.Time
	slept    bool
	sleeping chan struct{}
	wake     chan struct{}
}

func (c *gateClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *gateClock) Sleep(ctx context.Context, d time.Duration) error {
	c.mu.Lock()
	first := !c.slept
	c.slept = true
	c.now = c.now.Add(d)
	c.mu.Unlock()
	if first {
		close(c.sleeping)
		select {
		case <-c.wake:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return ctx.Err()
}

// TestCachedConnWaitsHoldingNoLock: a ConnCache's connections attach in
// exclusive locking mode, which keeps the attach's shared lock; an attempt
// whose BEGIN EXCLUSIVE is busy (here: another connection has the reserved
// lock) lets go of that shared lock before it waits, so that it stalls no
// one (docs/performance.md, "the SQLite path cheaper"). While it waits,
// another connection takes the exclusive lock at once; then the attempt
// takes the lock, and its release drops it.
//
// It holds for both ways of taking SQLite's lock: through SQL on a cached
// connection, and as byte-range locks without one (where the platform's
// SQLite locks bytes: platform.SQLite.LocksBytes).
func TestCachedConnWaitsHoldingNoLock(t *testing.T) {
	native := platform.Native().SQLite
	if native == nil {
		t.Skip("this OS has no native SQLite that locks files")
	}
	ways := map[string]platform.SQLite{"sql": sqlpath.Native()}
	if native.LocksBytes() {
		ways["ranged"] = native
	}
	for name, sq := range ways {
		t.Run(name, func(t *testing.T) { waitsHoldingNoLock(t, sq) })
	}
}

func waitsHoldingNoLock(t *testing.T, sq platform.SQLite) {
	path := filepath.Join(t.TempDir(), "x.lock")
	cache := sqlitelock.NewConnCache(2)
	p := &platform.Platform{FS: lockfs.OS(), SQLite: sq}
	l, err := sqlitelock.Acquire(context.Background(), p, path, sqlitelock.Attempt{Retry: sqlitelock.RetryBusy, Conns: cache.For(sq)})
	if err != nil {
		t.Fatal(err) // creates the lock's database
	}
	if err := l.Release(); err != nil {
		t.Fatal(err)
	}

	open := func() *sqlite3.Conn {
		t.Helper()
		c, err := sqlite3.OpenFlags(path, sqlite3.OPEN_READWRITE)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	writer := open()
	if err := writer.Exec("BEGIN IMMEDIATE"); err != nil {
		t.Fatal(err)
	}

	clock := &gateClock{now: time.Unix(1e9, 0), sleeping: make(chan struct{}), wake: make(chan struct{})}
	p.Clock = clock
	type result struct {
		l   *sqlitelock.Lock
		err error
	}
	done := make(chan result, 1)
	go func() {
		l, err := sqlitelock.Acquire(context.Background(), p, path, sqlitelock.Attempt{Retry: sqlitelock.RetryBusy, Conns: cache.For(sq)})
		done <- result{l, err}
	}()
	select {
	case <-clock.sleeping:
	case r := <-done:
		t.Fatalf("Acquire beside a reserved lock returned %v, %v without waiting", r.l, r.err)
	}
	if err := writer.Exec("ROLLBACK"); err != nil {
		t.Error(err)
	}
	other := open()
	if err := other.Exec("BEGIN EXCLUSIVE; ROLLBACK"); err != nil {
		t.Errorf("while the attempt waits, another connection's BEGIN EXCLUSIVE: %v; want it taken (the attempt holds no lock)", err)
	}
	close(clock.wake)
	r := <-done
	if r.err != nil {
		t.Fatalf("Acquire once the reserved lock went: %v", r.err)
	}
	if err := other.Exec("BEGIN EXCLUSIVE"); err == nil {
		t.Errorf("BEGIN EXCLUSIVE beside the held lock succeeded")
		other.Exec("ROLLBACK")
	}
	if err := r.l.Release(); err != nil {
		t.Fatal(err)
	}
	if err := other.Exec("BEGIN EXCLUSIVE; ROLLBACK"); err != nil {
		t.Errorf("BEGIN EXCLUSIVE after the release: %v; want the lock dropped", err)
	}
}

// TestConnCacheConnsAreExclusive: a ConnCache's connections come in
// exclusive locking mode for the databases they attach, and one given back
// is lent again to the same SQLite value only.
func TestConnCacheConnsAreExclusive(t *testing.T) {
	sq := sqlpath.Native()
	cache := sqlitelock.NewConnCache(2)
	conns := cache.For(sq)
	conn, err := conns.Get()
	if err != nil {
		t.Fatal(err)
	}
	stmt, _, err := conn.(*sqlconn.Conn).Raw().Prepare("PRAGMA locking_mode")
	if err != nil {
		t.Fatal(err)
	}
	if !stmt.Step() || stmt.ColumnText(0) != "exclusive" {
		t.Errorf("a cached connection's locking mode: %q; want exclusive", stmt.ColumnText(0))
	}
	stmt.Close()
	conns.Put(conn)
	if again, err := cache.For(otherSQLite{sq.(sqlapi.SQLConnector)}).Get(); err != nil || again == conn {
		t.Errorf("another SQLite value got %p (err %v), the connection given back for the first (%p)", again, err, conn)
	} else {
		again.Close()
	}
	if again, err := conns.Get(); err != nil || again != conn {
		t.Errorf("the same SQLite value got %p (err %v); want the connection given back, %p", again, err, conn)
	} else {
		again.Close()
	}
}

// otherSQLite is another SQLite value over the same SQLite.
type otherSQLite struct{ sqlapi.SQLConnector }
