package sqlitelock

import (
	"errors"
	"io/fs"

	"github.com/ncruces/go-sqlite3"

	"github.com/proclock/proclock/internal/lockrec"
	"github.com/proclock/proclock/lockfs"
	"github.com/proclock/proclock/platform"
)

// State is what a probe finds.
type State int

const (
	// Absent: no database file at the path.
	Absent State = iota
	// Free: the file exists and no connection holds it.
	Free
	// Held: a connection holds the lock.
	Held
	// Stamped: a stamp (or a torn one) is at the path: the file
	// mechanism's lock, for the caller to judge.
	Stamped
	// Flocked: no connection holds it, but a flock(2) lock does
	// (flock(1)'s): held, holder unknown.
	Flocked
)

// Probe reports whether the lock at path is held, writing nothing: one
// attempt at a shared lock through a read-only connection with no busy
// timeout, so concurrent probes never see a free lock as held, and an
// Acquire running at the same moment absorbs the probe's brief shared lock
// in its busy timeout. A missing file stays missing.
func Probe(p *platform.Platform, conns Conns, path string) (State, error) {
	info, _, err := p.FS.LstatIfPossible(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return Absent, nil
	case err != nil:
		return Absent, err
	case !info.Mode().IsRegular():
		if state, err := classify(p, path); state != Free || err != nil {
			return state, err
		}
	}
	// One open of the file serves the read of its bytes and the look for
	// a flock(2) lock on it.
	f, err := p.FS.OpenNoFollow(path)
	if err != nil {
		// Gone, or swapped for what does not open: as its bytes tell.
		return classify(p, path)
	}
	defer f.Close()
	if info.Size() != 0 {
		// Only the empty database is a SQLite lock: read it first.
		if state, err := classifyOpen(p, f, path); state != Free || err != nil {
			return state, err
		}
	}
	name, done, err := sqliteName(p, path)
	if err != nil {
		return Absent, err
	}
	defer done()
	conn, err := conns.Get()
	if err != nil {
		return Absent, &fs.PathError{Op: "probe", Path: path, Err: err}
	}
	state, err := probeConn(conn, name)
	putProbed(conns, conn, state, err)
	if err == nil {
		if state == Free && flockedOpen(p.FS, f) {
			return Flocked, nil
		}
		return state, nil
	}
	if errors.Is(err, sqlite3.NOTADB) || errors.Is(err, sqlite3.CORRUPT) {
		return classify(p, path) // not a database, or being rewritten
	}
	if err = openError(p.FS, path, err); errors.Is(err, fs.ErrNotExist) {
		return Absent, nil // removed since checkKind
	}
	return Absent, err
}

// probeConn attaches the database SQLite knows by name read-only, which
// takes a shared lock to read its schema: that fails at once against an
// exclusive holder.
func probeConn(conn *sqlite3.Conn, name string) (State, error) {
	switch err := exec(conn, attachSQL(name, true)); {
	case errors.Is(err, sqlite3.BUSY):
		return Held, nil
	case err != nil:
		return Absent, err
	}
	return Free, nil
}

// putProbed gives back a connection probeConn used: detached first when
// the probe attached it (Free); closed when that fails, or when a call
// into go-sqlite3 panicked on it (err).
func putProbed(conns Conns, conn *sqlite3.Conn, state State, err error) {
	if errors.Is(err, ErrPanic) || (state == Free && exec(conn, "DETACH "+schema) != nil) {
		closeConn(conn)
		return
	}
	conns.Put(conn)
}

// classifyOpen is classify, of the file at path opened as f.
func classifyOpen(p *platform.Platform, f lockfs.File, path string) (State, error) {
	kind, _, err := lockrec.ReadOpen(f)
	switch {
	case errors.Is(err, fs.ErrPermission):
		return Absent, err
	case err != nil:
		return classify(p, path)
	case kind == lockrec.Stamp || kind == lockrec.Torn:
		return Stamped, nil
	case kind == lockrec.Foreign:
		if err := checkKind(p.FS, path); err != nil {
			return Absent, err // a symlink, or gone
		}
		return Absent, &fs.PathError{Op: "probe", Path: path, Err: lockrec.ErrNotLockFile}
	}
	return Free, nil
}

// classify tells, by its bytes, what is at path when SQLite cannot: a
// stamp (Stamped), or an error for what is not a lock file.
func classify(p *platform.Platform, path string) (State, error) {
	seen, err := lockrec.Read(p.FS, path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return Absent, nil
	case err != nil:
		return Absent, err
	case seen.Kind == lockrec.Stamp || seen.Kind == lockrec.Torn:
		return Stamped, nil
	case seen.Kind == lockrec.Foreign:
		if err := checkKind(p.FS, path); err != nil {
			return Absent, err // a symlink, or gone
		}
		return Absent, &fs.PathError{Op: "probe", Path: path, Err: lockrec.ErrNotLockFile}
	}
	return Free, nil // an empty file or a database: free as far as looking tells
}
