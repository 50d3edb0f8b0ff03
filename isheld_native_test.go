package proclock_test

import (
	"context"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/proclock/proclock"
	"github.com/proclock/proclock/internal/locktest"
	"github.com/proclock/proclock/internal/sqlapi"
	"github.com/proclock/proclock/internal/sqlitelock"
	"github.com/proclock/proclock/lockfs"
	"github.com/proclock/proclock/platform"
)

// Probes running at the same moment do not keep an Acquire from a free
// lock: its busy timeout and retries absorb their brief shared locks
// (docs/design.md). Probes at once all see a free lock as free.
func TestIsHeldDoesNotBlockAcquire(t *testing.T) {
	for _, mech := range mechanisms {
		t.Run(string(mech), func(t *testing.T) {
			if mech == proclock.MechanismFile {
				locktest.SkipOnWine(t, locktest.WineBirthTime)
			}
			p := nativePlatform(mech)
			if p.SQLite == nil {
				if p.Process == nil {
					t.Skip("the file mechanism needs this process's identity, and the native platform has no Process here")
				}
				if _, err := p.Process.Self(); err != nil {
					t.Skipf("the file mechanism needs this process's identity, which the native platform cannot tell here: %v", err)
				}
			}
			path := filepath.Join(t.TempDir(), "app.lock")
			ctx := context.Background()
			if l, err := proclock.Acquire(ctx, p, path, proclock.Options{}); err != nil {
				t.Fatal(err)
			} else {
				l.Release()
			}
			// Probes from another platform value: a process of its own
			// as far as turns go, sharing the OS's locks.
			q := nativePlatform(mech)
			q.FS = withRanges(&distinctFS{q.FS}, q.FS)
			if q.SQLite != nil {
				q.SQLite = &distinctSQLite{q.SQLite}
			}
			// Each round, three goroutines probe a few times each while
			// the Acquire runs, released together.
			var probes atomic.Int64
			var wg sync.WaitGroup
			for round := range 100 {
				start := make(chan struct{})
				for range 3 {
					wg.Go(func() {
						<-start
						for range 5 {
							if _, err := proclock.IsHeld(ctx, q, path); err != nil {
								t.Error(err)
								return
							}
							probes.Add(1)
						}
					})
				}
				close(start)
				l, err := proclock.Acquire(ctx, p, path, proclock.Options{})
				wg.Wait()
				if err != nil {
					t.Fatalf("round %d: Acquire beside concurrent probes: %v", round, err)
				}
				if err := l.Release(); err != nil {
					t.Fatal(err)
				}
			}
			t.Logf("%d probes ran beside 100 acquisitions", probes.Load())
			if probes.Load() == 0 {
				t.Fatal("no probe ran")
			}

			var held atomic.Int64
			for range 8 {
				wg.Go(func() {
					for range 50 {
						if h, err := proclock.IsHeld(ctx, q, path); err != nil || h {
							held.Add(1)
						}
					}
				})
			}
			wg.Wait()
			if n := held.Load(); n != 0 {
				t.Fatalf("%d of 400 concurrent probes of a free lock said held or failed", n)
			}
		})
	}
}

// distinctFS and distinctSQLite wrap a platform's values into new ones,
// so that the platform keys turns of its own, as another process would.
type distinctFS struct{ lockfs.FS }

// withRanges is w, a wrapper of inner that hides inner's optional powers,
// with inner's byte-range locks (lockfs.RangeLocker) where inner has them:
// the SQLite mechanism takes SQLite's locks through them on linux, and
// has no other way there.
func withRanges(w, inner lockfs.FS) lockfs.FS {
	if rl, ok := inner.(lockfs.RangeLocker); ok {
		return &rangedFS{w, rl}
	}
	return w
}

type rangedFS struct {
	lockfs.FS
	lockfs.RangeLocker
}

// fakeRanges gives a wrapper of a fake world's FS the fake's byte-range
// locks, beside the wrapper's own powers.
type fakeRanges struct{ rl lockfs.RangeLocker }

func (f fakeRanges) OpenLockable(name string) (lockfs.File, error) { return f.rl.OpenLockable(name) }
func (f fakeRanges) TryLockRange(lf lockfs.File, off, n int64) (bool, error) {
	return f.rl.TryLockRange(lf, off, n)
}
func (f fakeRanges) LockRange(lf lockfs.File, off, n int64) error {
	return f.rl.LockRange(lf, off, n)
}
func (f fakeRanges) RangeWriteLocked(lf lockfs.File, off, n int64) (bool, error) {
	return f.rl.RangeWriteLocked(lf, off, n)
}

type distinctSQLite struct{ platform.SQLite }

// Connect and SQLiteName forward the wrapped SQLite's connections and
// naming (sqlapi.SQLConnector, sqlapi.SQLiteNamer): darwin's, windows'
// and the BSDs' SQLite locks through connections, and a wrapper that hid
// them would leave it no way to lock.
func (d *distinctSQLite) Connect() (sqlapi.SQLConn, error) {
	if c, ok := d.SQLite.(sqlapi.SQLConnector); ok {
		return c.Connect()
	}
	return nil, sqlitelock.ErrNoConnections
}

func (d *distinctSQLite) SQLiteName(path string) (string, func(), error) {
	if n, ok := d.SQLite.(sqlapi.SQLiteNamer); ok {
		return n.SQLiteName(path)
	}
	if len(path) > sqlapi.MaxSQLitePath {
		return "", nil, sqlapi.ErrSQLitePathTooLong
	}
	return path, func() {}, nil
}
