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

// Probe reports whether the lock at path is absent, free or held, writing
// nothing: one try at a shared lock, which a concurrent Acquire absorbs in
// its busy timeout. why names a flock(2) lock that holds it. A stamp is an
// error matching ErrStamped, for the caller to judge.
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
	// One open serves the read of the bytes and both looks at its locks.
	f, err := fsx.OpenLook(p.FS, path)
	if err != nil {
		state, err := classify(p, path) // gone, or swapped for what does not open
		return state, "", err
	}
	defer f.Close()
	if info.Size() != 0 {
		if state, err := classifyOpen(p, f, path); state != lockrec.StateFree || err != nil {
			return state, "", err
		}
	}
	return probeLocks(p, conns, path, f)
}

// probeLocks is Probe's look at the locks on f, open at path.
func probeLocks(p *platform.Platform, conns Conns, path string, f lockfs.File) (lockrec.State, string, error) {
	if rl, ok := byteLocks(p); ok {
		held, err := rl.RangeWriteLocked(f, pendingByte, lockBytes)
		switch {
		case err != nil:
			return lockrec.StateAbsent, "", &fs.PathError{Op: "probe", Path: path, Err: err}
		case held:
			return lockrec.StateHeld, "", nil
		}
	} else if state, err := probeSQL(p, conns, path); err != nil || state != lockrec.StateFree {
		return state, "", err
	}
	if lockrec.Flocked(p.FS, f) {
		return lockrec.StateHeld, lockrec.FlockReason, nil
	}
	return lockrec.StateFree, "", nil
}

// probeSQL is Probe's look through SQL.
func probeSQL(p *platform.Platform, conns Conns, path string) (lockrec.State, error) {
	name, done, err := sqliteName(p, path, "probe")
	if err != nil {
		return lockrec.StateAbsent, err
	}
	defer done()
	conn, err := conns.Get()
	if err != nil {
		return lockrec.StateAbsent, &fs.PathError{Op: "probe", Path: path, Err: err}
	}
	// Attaching read-only takes a shared lock to read the schema: busy at
	// once beside an exclusive holder.
	state, err := lockrec.StateFree, exec(conn, attachSQL(name, true))
	if errors.Is(err, sqlapi.SQLiteBusy) {
		state, err = lockrec.StateHeld, nil
	}
	if errors.Is(err, ErrPanic) || (err == nil && state == lockrec.StateFree && exec(conn, "DETACH "+schema) != nil) {
		closeConn(conn)
	} else {
		conns.Put(conn)
	}
	switch {
	case err == nil:
		return state, nil
	case errors.Is(err, sqlapi.SQLiteNotADB) || errors.Is(err, sqlapi.SQLiteCorrupt):
		return classify(p, path) // not a database, or being rewritten
	}
	if err = openError(p.FS, path, err); errors.Is(err, fs.ErrNotExist) {
		return lockrec.StateAbsent, nil
	}
	return lockrec.StateAbsent, err
}

// classifyOpen is classify, of the file at path opened as f.
func classifyOpen(p *platform.Platform, f lockfs.File, path string) (lockrec.State, error) {
	kind, _, err := lockrec.ReadOpen(f)
	switch {
	case errors.Is(err, fs.ErrPermission):
		return lockrec.StateAbsent, err
	case err != nil:
		return classify(p, path)
	}
	return probed(p, kind, path)
}

// classify tells by its bytes what is at path when SQLite cannot.
func classify(p *platform.Platform, path string) (lockrec.State, error) {
	seen, err := lockrec.Read(p.FS, path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return lockrec.StateAbsent, nil
	case err != nil:
		return lockrec.StateAbsent, err
	}
	return probed(p, seen.Kind, path)
}

// probed is classify's verdict on bytes of kind at path.
func probed(p *platform.Platform, kind lockrec.Kind, path string) (lockrec.State, error) {
	if kind == lockrec.Foreign {
		if err := checkKind(p.FS, path); err != nil {
			return lockrec.StateAbsent, err // a symlink, or gone
		}
	}
	if err := contentError(kind, "probe", path); err != nil {
		return lockrec.StateAbsent, err
	}
	return lockrec.StateFree, nil
}
