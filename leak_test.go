package proclock_test

import (
	"context"
	"errors"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ncruces/go-sqlite3"

	"github.com/proclock/proclock"
	"github.com/proclock/proclock/fake"
	"github.com/proclock/proclock/fake/fakesql"
	"github.com/proclock/proclock/internal/sqlapi"
	"github.com/proclock/proclock/internal/sqlconn"
	"github.com/proclock/proclock/internal/sqlitelock"
	"github.com/proclock/proclock/platform"
)

// Rounds of a leak check: acquire/release cycles, then waits for a held
// lock that are cancelled.
const (
	leakCycles = 1000
	leakWaits  = 100
)

// leakCounts is what a lock must not leave behind: goroutines, open files
// (descriptors natively, the world's open files in a fake one) and open
// SQLite connections.
type leakCounts struct {
	goroutines, files, conns int
}

// leakWorld is what a leak check runs against: a platform whose connections
// are counted and whose waits between attempts are signalled, a free lock
// and a lock that another holder keeps, and a count of open files.
type leakWorld struct {
	p     *platform.Platform
	conns *leakConnCounter // nil without SQLite
	// sql: the SQLite mechanism takes its lock through SQL, on
	// connections; else as byte-range locks, without one.
	sql    bool
	pauses chan struct{}
	// queued, when not nil, reports whether a wait for held is queued in
	// the kernel (linux's SQLite waits: docs/design.md, "Waiting"), which
	// no clock or wake-up source sees.
	queued func() bool
	free   string
	held   string
	files  func(t *testing.T) int
}

// setPlatform makes w run on p, with p's SQLite (if any) counted and its
// clock (and wake-up source) signalling on w.pauses whenever an Acquire
// sleeps on its caller's context.
func (w *leakWorld) setPlatform(p *platform.Platform) {
	w.pauses = make(chan struct{}, 1)
	if p.SQLite != nil {
		w.conns = &leakConnCounter{inner: p.SQLite}
		p.SQLite = w.conns
	}
	p.Clock = leakPauseClock{Clock: p.Time(), pauses: w.pauses}
	if p.Wake != nil {
		p.Wake = leakPauseWaker{Waker: p.Wake, pauses: w.pauses}
	}
	w.p = p
}

func (w *leakWorld) counts(t *testing.T) leakCounts {
	c := leakCounts{goroutines: runtime.NumGoroutine(), files: w.files(t)}
	if w.conns != nil {
		c.conns = int(w.conns.open.Load())
	}
	return c
}

// checkNoLeaks runs leakCycles acquire/release cycles of w.free (every other
// one with RemoveOnRelease) and leakWaits waits for w.held, each cancelled
// once it is waiting, and checks that the goroutines, files and SQLite
// connections open before are what is open after.
func checkNoLeaks(t *testing.T, w *leakWorld) {
	ctx := context.Background()
	cycle := func(i int) {
		l, err := proclock.Acquire(ctx, w.p, w.free, proclock.Options{RemoveOnRelease: i%2 == 1})
		if err != nil {
			t.Fatalf("cycle %d: %v", i, err)
		}
		if err := l.Release(); err != nil {
			t.Fatalf("cycle %d: release: %v", i, err)
		}
	}
	// Warm up: this platform's idle connections are made (two, borrowed
	// at once, more than a cycle here ever borrows), and whatever is made
	// once per process is made.
	cycle(0)
	w.cancelledWait(t, 0)
	if a, err := proclock.Acquire(ctx, w.p, w.free, proclock.Options{}); err != nil {
		t.Fatal(err)
	} else if b, err := proclock.Acquire(ctx, w.p, w.free+"-2", proclock.Options{RemoveOnRelease: true}); err != nil {
		t.Fatal(err)
	} else {
		b.Release()
		a.Release()
	}

	before := w.counts(t)
	for i := range leakCycles {
		cycle(i)
	}
	for i := range leakWaits {
		w.cancelledWait(t, i)
	}
	// Goroutines that are ending get a chance to end; yielding, not
	// sleeping, since nothing a lock starts may outlive it anyway.
	for range 100_000 {
		if runtime.NumGoroutine() <= before.goroutines {
			break
		}
		runtime.Gosched()
	}
	after := w.counts(t)
	t.Logf("open before: %+v; after: %+v", before, after)
	// Fewer goroutines after is no leak: one of an earlier test may have
	// ended meanwhile.
	if after.files != before.files || after.conns != before.conns || after.goroutines > before.goroutines {
		t.Errorf("after %d cycles and %d cancelled waits: %+v open; before: %+v", leakCycles, leakWaits, after, before)
	}
	switch {
	case w.sql && before.conns == 0:
		t.Errorf("no SQLite connection counted: the count sees nothing")
	case w.conns != nil && !w.sql && before.conns != 0:
		t.Errorf("%d SQLite connections open on the byte-range path, which opens none", before.conns)
	}
}

// cancelledWait waits for w.held and cancels the wait once the waiter
// sleeps (in its first attempt's busy wait or retries, or between
// attempts); every fourth wait instead runs out of time a few milliseconds
// in, wherever it is then.
func (w *leakWorld) cancelledWait(t *testing.T, i int) {
	t.Helper()
	drain(w.pauses)
	ctx, cancel := context.WithCancel(context.Background())
	want := context.Canceled
	if i%4 == 3 {
		ctx, cancel = context.WithTimeout(context.Background(), 3*time.Millisecond)
		want = context.DeadlineExceeded
	}
	defer cancel()
	done := make(chan error, 1)
	go func() {
		l, err := proclock.Acquire(ctx, w.p, w.held, proclock.Options{Wait: true})
		if err == nil {
			l.Release()
			err = errors.New("acquired a lock that another holder keeps")
		}
		done <- err
	}()
	for waiting := want != context.Canceled; !waiting; {
		select {
		case <-w.pauses:
			waiting = true
		case err := <-done:
			t.Fatalf("wait %d ended before it paused: %v", i, err)
		default:
			waiting = w.queued != nil && w.queued()
			runtime.Gosched()
		}
	}
	if want == context.Canceled {
		cancel()
	}
	if err := <-done; !errors.Is(err, want) {
		t.Fatalf("wait %d: %v; want an error matching %v", i, err, want)
	}
}

func drain(c chan struct{}) {
	select {
	case <-c:
	default:
	}
}

// leakPauseClock tells, on pauses, when an Acquire sleeps on a context
// that can end: the caller's, which every sleep of an acquisition is on (the
// first attempt's busy handler ticks and short retries, and the pauses
// between attempts), so that cancelling it ends the wait wherever it is.
type leakPauseClock struct {
	platform.Clock
	pauses chan struct{}
}

func (c leakPauseClock) Sleep(ctx context.Context, d time.Duration) error {
	if ctx.Done() != nil {
		select {
		case c.pauses <- struct{}{}:
		default:
		}
	}
	return c.Clock.Sleep(ctx, d)
}

// leakConnCounter is a platform.SQLite that counts its open connections.
// SQLite itself says when one closes: each gets an eponymous virtual table,
// connected at once, which SQLite disconnects when the connection closes.
type leakConnCounter struct {
	inner platform.SQLite
	open  atomic.Int64
}

const leakWatchTable = "proclock_leak_watch"

func (c *leakConnCounter) LocksBytes() bool { return c.inner.LocksBytes() }

// Connect counts the inner SQLite's connections; it fails where the inner
// SQLite has none (a fake process's, which locks bytes).
func (c *leakConnCounter) Connect() (sqlapi.SQLConn, error) {
	sc, ok := c.inner.(sqlapi.SQLConnector)
	if !ok {
		return nil, sqlitelock.ErrNoConnections
	}
	wrapped, err := sc.Connect()
	if err != nil {
		return nil, err
	}
	conn := wrapped.(*sqlconn.Conn).Raw()
	//lint:ignore SA1019 the generic method it names is not in Go yet
	err = sqlite3.CreateModule(conn, leakWatchTable, nil, func(db *sqlite3.Conn, _, _, _ string, _ ...string) (leakWatch, error) {
		return leakWatch{&c.open}, db.DeclareVTab("CREATE TABLE x(a)")
	})
	if err == nil {
		err = conn.Exec("SELECT * FROM " + leakWatchTable)
	}
	if err != nil {
		conn.Close()
		return nil, err
	}
	c.open.Add(1)
	return wrapped, nil
}

// leakWatch is the virtual table that watches a connection: empty, and
// closed by SQLite with its connection.
type leakWatch struct{ open *atomic.Int64 }

func (leakWatch) BestIndex(*sqlite3.IndexInfo) error { return nil }
func (leakWatch) Open() (sqlite3.VTabCursor, error)  { return leakNoRows{}, nil }
func (w leakWatch) Close() error                     { w.open.Add(-1); return nil }

type leakNoRows struct{}

func (leakNoRows) Filter(int, string, ...sqlite3.Value) error { return nil }
func (leakNoRows) Next() error                                { return nil }
func (leakNoRows) EOF() bool                                  { return true }
func (leakNoRows) Column(sqlite3.Context, int) error          { return nil }
func (leakNoRows) RowID() (int64, error)                      { return 0, nil }

// leakSQL names the SQLite mechanism on the SQL path in leak tests.
const leakSQL proclock.Mechanism = "sqlite(sql)"

// In a fake world, the same cycles and cancelled waits leave the world's
// open files, the process's SQLite connections and this program's
// goroutines as they were.
func TestLeaksFake(t *testing.T) {
	for _, mech := range []proclock.Mechanism{proclock.MechanismSQLite, leakSQL, proclock.MechanismFile} {
		t.Run(string(mech), func(t *testing.T) {
			world := fake.New()
			hp, wp := world.Spawn(), world.Spawn()
			holder, waiter := hp.Platform(), wp.Platform()
			switch mech {
			case proclock.MechanismFile:
				holder, waiter = holder.WithoutSQLite(), waiter.WithoutSQLite()
			case leakSQL:
				holder, waiter = fakesql.SQLPlatform(hp), fakesql.SQLPlatform(wp)
			}
			w := &leakWorld{
				free:  "/tmp/free.lock",
				held:  "/tmp/held.lock",
				files: func(*testing.T) int { return world.OpenFiles() },
				sql:   mech == leakSQL,
			}
			w.setPlatform(waiter)
			if mech == proclock.MechanismSQLite {
				// A wait in the fake kernel's queue counts as a sleeper:
				// asked with a done context, WaitSleepers tells at once.
				now, cancel := context.WithCancel(context.Background())
				cancel()
				w.queued = func() bool { return world.WaitSleepers(now, 1) == nil }
			}
			l, err := proclock.Acquire(context.Background(), holder, w.held, proclock.Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer l.Release()
			checkNoLeaks(t, w)
		})
	}
}
