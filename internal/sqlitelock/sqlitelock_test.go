package sqlitelock_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/proclock/proclock/fake"
	"github.com/proclock/proclock/fake/fakesql"
	"github.com/proclock/proclock/internal/lockrec"
	"github.com/proclock/proclock/internal/sqlapi"
	"github.com/proclock/proclock/internal/sqlitelock"
	"github.com/proclock/proclock/platform"
)

const lockPath = "/tmp/app.lock"

// conns lends a fresh in-memory connection each time, in exclusive
// locking mode as sqlitelock.Conns must.
type conns struct{ sq platform.SQLite }

func (c conns) Get() (sqlapi.SQLConn, error) {
	sc, ok := c.sq.(sqlapi.SQLConnector)
	if !ok {
		return nil, sqlitelock.ErrNoConnections
	}
	conn, err := sc.Connect()
	if err == nil {
		err = conn.Exec("PRAGMA locking_mode=EXCLUSIVE")
	}
	return conn, err
}
func (c conns) Put(conn sqlapi.SQLConn) { conn.Close() }

func attempt(p *fake.Process, remove bool) (*sqlitelock.Lock, error) {
	return attemptVia(p, false, remove)
}

// attemptVia is attempt, through SQL when sql is set: the fake world's
// SQLite takes the lock as byte-range locks, unless fakesql.SQLPlatform is
// asked for.
func attemptVia(p *fake.Process, sql, remove bool) (*sqlitelock.Lock, error) {
	pl := p.Platform()
	if sql {
		pl.SQLite = fakesql.SQLPlatform(p).SQLite
	}
	id := p.Identity()
	return sqlitelock.Acquire(context.Background(), pl, lockPath, sqlitelock.Attempt{Retry: sqlitelock.RetryBusy, Self: &id, RemoveOnRelease: remove, Conns: conns{pl.SQLite}})
}

func probe(t *testing.T, p *fake.Process) lockrec.State {
	t.Helper()
	pl := p.Platform()
	st, _, err := sqlitelock.Probe(pl, conns{pl.SQLite}, lockPath)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// opensBy counts the acting process's opens of the lock's path, and runs
// at(n) on the n-th.
func opensBy(w *fake.World, p *fake.Process, at func(n int)) {
	var mu sync.Mutex
	n := 0
	w.After("open", lockPath, func(ev fake.Event) error {
		if ev.PID != p.PID() || ev.Err != nil {
			return nil
		}
		mu.Lock()
		n++
		k := n
		mu.Unlock()
		at(k)
		return nil
	})
}

// RemoveOnRelease staged exactly: B has opened the old file when A
// releases and removes it and C takes the new one. B, once it goes on,
// locks the old inode, sees the path now names another file, and starts
// over: it finds C holding. One holder, and its file is at the path.
//
// Both ways of taking SQLite's lock: the byte-range lock is taken on the
// pin (the attempt's first open), SQL's on SQLite's own open (its second).
func TestRemoveOnReleaseRaceStaged(t *testing.T) {
	for _, way := range lockWays {
		t.Run(way.name, func(t *testing.T) { removeOnReleaseRaceStaged(t, way.sql, way.lockOpen) })
	}
}

func removeOnReleaseRaceStaged(t *testing.T, sql bool, lockOpen int) {
	w := fake.New()
	a, b, c := w.Spawn(), w.Spawn(), w.Spawn()
	la, err := attempt(a, true)
	if err != nil {
		t.Fatal(err)
	}
	la.Release() // leaves no file: B's first attempt would retry at once
	la, err = attempt(a, true)
	if err != nil {
		t.Fatal(err)
	}
	opened := make(chan struct{})
	resume := make(chan struct{})
	var bOpens atomic.Int32
	opensBy(w, b, func(n int) {
		bOpens.Store(int32(n))
		if n == lockOpen {
			close(opened)
			<-resume
		}
	})
	result := make(chan error, 1)
	go func() {
		l, err := attemptVia(b, sql, true)
		if err == nil {
			l.Release()
			err = errors.New("B took the lock")
		}
		result <- err
	}()
	<-opened
	if err := la.Release(); err != nil {
		t.Fatal(err)
	}
	lc, err := attempt(c, true)
	if err != nil {
		t.Fatalf("C: %v", err)
	}
	close(resume)
	if err := <-result; !isBusy(err) {
		t.Fatalf("B = %v; want held (by C)", err)
	}
	if n := bOpens.Load(); n < int32(2*lockOpen) {
		t.Fatalf("B opened the path %d times; want a second attempt after the swap (%d or more)", n, 2*lockOpen)
	}
	if st := probe(t, a); st != lockrec.StateHeld {
		t.Fatalf("probe of the path = %v while C holds; want held", st)
	}
	if err := lc.Release(); err != nil {
		t.Fatal(err)
	}
}

// lockWays are the two ways of taking SQLite's lock, and which open of
// the path an attempt locks the file after: the byte-range lock is taken
// on the pin (the attempt's first open), SQL's on SQLite's own (its
// second).
var lockWays = []struct {
	name     string
	sql      bool
	lockOpen int
}{{"ranged", false, 1}, {"sql", true, 2}}

func isBusy(err error) bool {
	_, ok := errors.AsType[*lockrec.HeldError](err)
	return ok
}

// A file swapped for another inode between the attempt's first reading of
// the path and its lock makes the attempt start over, and it then holds
// the file that is at the path; by both ways of taking SQLite's lock
// (lockWays).
func TestInodeSwapRetries(t *testing.T) {
	for _, way := range lockWays {
		t.Run(way.name, func(t *testing.T) { inodeSwapRetries(t, way.sql, way.lockOpen) })
	}
}

func inodeSwapRetries(t *testing.T, sql bool, lockOpen int) {
	w := fake.New()
	a, b := w.Spawn(), w.Spawn()
	first, err := attempt(a, false)
	if err != nil {
		t.Fatal(err)
	}
	first.Release() // the file now exists
	opens := 0
	opensBy(w, a, func(n int) {
		opens = n
		if n == 1 {
			if err := w.SwapInode(lockPath); err != nil {
				t.Error(err)
			}
		}
	})
	l, err := attemptVia(a, sql, false)
	if err != nil {
		t.Fatalf("Acquire after a swap: %v", err)
	}
	defer l.Release()
	if opens < 2*lockOpen {
		t.Fatalf("%d opens of the path; want a second attempt (%d or more)", opens, 2*lockOpen)
	}
	if st := probe(t, b); st != lockrec.StateHeld {
		t.Fatalf("probe = %v; want the file at the path held", st)
	}
}

// .holder names the holder while held, and is removed while the lock is
// still held: never does a .holder outlive its lock.
func TestHolderRemovedBeforeUnlock(t *testing.T) {
	w := fake.New()
	a, b := w.Spawn(), w.Spawn()
	l, err := attempt(a, false)
	if err != nil {
		t.Fatal(err)
	}
	rec := lockrec.ReadHolder(w.FS(), lockPath)
	if rec == nil || rec.PID != a.PID() || rec.StartTime != a.Identity().StartTime {
		t.Fatalf(".holder = %+v while held; want pid %d", rec, a.PID())
	}
	var stateAtRemoval []lockrec.State
	w.Before("remove", lockPath+lockrec.MarkSuffix, func(ev fake.Event) error {
		if ev.PID == a.PID() {
			stateAtRemoval = append(stateAtRemoval, probe(t, b))
		}
		return nil
	})
	if err := l.Release(); err != nil {
		t.Fatal(err)
	}
	if len(stateAtRemoval) != 1 || stateAtRemoval[0] != lockrec.StateHeld {
		t.Fatalf("lock state when .holder was removed: %v; want [held]", stateAtRemoval)
	}
	if st := probe(t, b); st != lockrec.StateFree {
		t.Fatalf("after release: %v; want free", st)
	}
	if lockrec.ReadHolder(w.FS(), lockPath) != nil {
		t.Fatal(".holder left after release")
	}
}

// No file stays open after releases and failed attempts.
func TestNoFileOutlivesAttempts(t *testing.T) {
	w := fake.New()
	a, b := w.Spawn(), w.Spawn()
	before := w.OpenFiles()
	for range 50 {
		l, err := attempt(a, false)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := attempt(b, false); !isBusy(err) {
			t.Fatalf("B = %v; want held", err)
		}
		probe(t, b)
		l.Release()
	}
	if got := w.OpenFiles(); got != before {
		t.Fatalf("%d files open after 50 rounds; want %d", got, before)
	}
}
