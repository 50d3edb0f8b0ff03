package sqlitelock

import (
	"errors"
	"io/fs"

	"github.com/proclock/proclock/internal/fsx"
	"github.com/proclock/proclock/internal/lockrec"
	"github.com/proclock/proclock/internal/sqlapi"
	"github.com/proclock/proclock/lockfs"
	"github.com/proclock/proclock/platform"
)

// Probe reports whether the lock at path is held (lockrec.StateAbsent,
// StateFree or StateHeld), writing nothing: one attempt at a shared lock
// through a read-only connection with no busy timeout, so concurrent
// probes never see a free lock as held, and an Acquire running at the same
// moment absorbs the probe's brief shared lock in its busy timeout. A
// missing file stays missing. A lock that no connection holds but a
// flock(2) lock does (flock(1)'s) is held, its holder unknown, and why
// says so ("a flock(2) lock"). A stamp (or a torn one) at the path is an error
// matching ErrStamped: the file mechanism's lock, for the caller to judge.
func Probe(p *platform.Platform, conns Conns, path string) (state lockrec.State, why string, err error) {
	info, err := p.FS.Lstat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return lockrec.StateAbsent, "", nil
	case err != nil:
		return lockrec.StateAbsent, "", err
	case !info.Mode().IsRegular():
		if state, err := classify(p, path); state != lockrec.StateFree || err != nil {
			return state, "", err
		}
	}
	// One open of the file, for a look (fsx.OpenLook: not kept),
	// serves the read of its bytes and the looks for a SQLite lock and a
	// flock(2) lock on it.
	f, err := fsx.OpenLook(p.FS, path)
	if err != nil {
		// Gone, or swapped for what does not open: as its bytes tell.
		state, err := classify(p, path)
		return state, "", err
	}
	defer f.Close()
	if info.Size() != 0 {
		// Only the empty database is a SQLite lock: read it first.
		if state, err := classifyOpen(p, f, path); state != lockrec.StateFree || err != nil {
			return state, "", err
		}
	}
	if rl, ok := byteLocks(p); ok {
		// SQLite's locks looked at directly: one question to the
		// kernel, no connection.
		held, err := rangeHeld(rl, f)
		switch {
		case err != nil:
			return lockrec.StateAbsent, "", &fs.PathError{Op: "probe", Path: path, Err: err}
		case held:
			return lockrec.StateHeld, "", nil
		case flockedOpen(p.FS, f):
			return lockrec.StateHeld, flockReason, nil
		}
		return lockrec.StateFree, "", nil
	}
	return probeSQL(p, conns, path, f)
}

// probeSQL is Probe through SQL, of the file at path, open as f.
func probeSQL(p *platform.Platform, conns Conns, path string, f lockfs.File) (lockrec.State, string, error) {
	if err := noSQLPath(p); err != nil {
		return lockrec.StateAbsent, "", &fs.PathError{Op: "probe", Path: path, Err: err}
	}
	name, done, err := sqliteName(p, path)
	if err != nil {
		return lockrec.StateAbsent, "", err
	}
	defer done()
	conn, err := conns.Get()
	if err != nil {
		return lockrec.StateAbsent, "", &fs.PathError{Op: "probe", Path: path, Err: err}
	}
	state, err := probeConn(conn, name)
	putProbed(conns, conn, state, err)
	if err == nil {
		if state == lockrec.StateFree && flockedOpen(p.FS, f) {
			return lockrec.StateHeld, flockReason, nil
		}
		return state, "", nil
	}
	if errors.Is(err, sqlapi.SQLiteNotADB) || errors.Is(err, sqlapi.SQLiteCorrupt) {
		state, err := classify(p, path) // not a database, or being rewritten
		return state, "", err
	}
	if err = openError(p.FS, path, err); errors.Is(err, fs.ErrNotExist) {
		return lockrec.StateAbsent, "", nil // removed since checkKind
	}
	return lockrec.StateAbsent, "", err
}

// probeConn attaches the database SQLite knows by name read-only, which
// takes a shared lock to read its schema: that fails at once against an
// exclusive holder.
func probeConn(conn sqlapi.SQLConn, name string) (lockrec.State, error) {
	switch err := exec(conn, attachSQL(name, true)); {
	case errors.Is(err, sqlapi.SQLiteBusy):
		return lockrec.StateHeld, nil
	case err != nil:
		return lockrec.StateAbsent, err
	}
	return lockrec.StateFree, nil
}

// putProbed gives back a connection probeConn used: detached first when
// the probe attached it (free); closed when that fails, or when a call
// into go-sqlite3 panicked on it (err).
func putProbed(conns Conns, conn sqlapi.SQLConn, state lockrec.State, err error) {
	if errors.Is(err, ErrPanic) || (state == lockrec.StateFree && exec(conn, "DETACH "+schema) != nil) {
		closeConn(conn)
		return
	}
	conns.Put(conn)
}

// classifyOpen is classify, of the file at path opened as f.
func classifyOpen(p *platform.Platform, f lockfs.File, path string) (lockrec.State, error) {
	kind, _, err := lockrec.ReadOpen(f)
	switch {
	case errors.Is(err, fs.ErrPermission):
		return lockrec.StateAbsent, err
	case err != nil:
		return classify(p, path)
	case kind == lockrec.Stamp || kind == lockrec.Torn:
		return lockrec.StateAbsent, &fs.PathError{Op: "probe", Path: path, Err: ErrStamped}
	case kind == lockrec.Foreign:
		if err := checkKind(p.FS, path); err != nil {
			return lockrec.StateAbsent, err // a symlink, or gone
		}
		return lockrec.StateAbsent, &fs.PathError{Op: "probe", Path: path, Err: lockrec.ErrNotLockFile}
	}
	return lockrec.StateFree, nil
}

// classify tells, by its bytes, what is at path when SQLite cannot: a
// stamp (an error matching ErrStamped), or an error for what is not a lock
// file.
func classify(p *platform.Platform, path string) (lockrec.State, error) {
	seen, err := lockrec.Read(p.FS, path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return lockrec.StateAbsent, nil
	case err != nil:
		return lockrec.StateAbsent, err
	case seen.Kind == lockrec.Stamp || seen.Kind == lockrec.Torn:
		return lockrec.StateAbsent, &fs.PathError{Op: "probe", Path: path, Err: ErrStamped}
	case seen.Kind == lockrec.Foreign:
		if err := checkKind(p.FS, path); err != nil {
			return lockrec.StateAbsent, err // a symlink, or gone
		}
		return lockrec.StateAbsent, &fs.PathError{Op: "probe", Path: path, Err: lockrec.ErrNotLockFile}
	}
	return lockrec.StateFree, nil // an empty file or a database: free as far as looking tells
}
