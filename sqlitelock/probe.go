package sqlitelock

import (
	"errors"
	"io/fs"

	"github.com/ncruces/go-sqlite3"

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
)

// Probe reports whether the lock at path is held, writing nothing: one
// attempt at a shared lock through a read-only connection with no busy
// timeout, so concurrent probes never see a free lock as held, and an
// Acquire running at the same moment absorbs the probe's brief shared lock
// in its busy timeout. A missing file stays missing.
func Probe(p *platform.Platform, path string) (State, error) {
	err := checkKind(p.FS, path)
	if err == nil {
		var conn *sqlite3.Conn
		if conn, err = p.SQLite.Open(path, sqlite3.OPEN_READONLY); err == nil {
			defer conn.Close()
			return probeConn(conn, path)
		}
		err = openError(p.FS, path, err)
	}
	if errors.Is(err, fs.ErrNotExist) {
		return Absent, nil
	}
	return Absent, err
}

// probeConn tries a shared lock: reading the schema takes one, which fails
// at once against an exclusive holder.
func probeConn(conn *sqlite3.Conn, path string) (State, error) {
	switch err := conn.Exec(`PRAGMA schema_version;`); {
	case errors.Is(err, sqlite3.BUSY):
		return Held, nil
	case err != nil:
		return Absent, &fs.PathError{Op: "probe", Path: path, Err: err}
	}
	return Free, nil
}
