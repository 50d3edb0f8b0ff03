package sqlitelock

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"time"

	"github.com/ncruces/go-sqlite3"

	"github.com/proclock/proclock/lockfs"
	"github.com/proclock/proclock/platform"
)

// BusyTimeout is how long the first attempt of an acquisition waits for a
// busy lock before its short retries.
const BusyTimeout = 10 * time.Millisecond

// Short retries of a first attempt after its busy timeout: a few, 5–25 ms
// apart, to ride out a probe or a holder that is just letting go.
const (
	retries     = 3
	retryMin    = 5 * time.Millisecond
	retrySpread = 20 * time.Millisecond
)

// maxSwaps bounds the attempts dropped because the file at the path
// changed while it was being locked.
const maxSwaps = 8

// lockSQL takes the lock: exclusive locking mode keeps it until the
// connection closes, no journal is ever written, and the open exclusive
// transaction is what holds it.
const lockSQL = `PRAGMA locking_mode=EXCLUSIVE; PRAGMA journal_mode=OFF; BEGIN EXCLUSIVE;`

// Attempt says how to make one attempt.
type Attempt struct {
	// First is set on the first attempt of an acquisition: only it waits
	// out BusyTimeout and makes short retries.
	First bool
	// Self is this process's identity, written to .holder; nil when
	// unknown.
	Self *platform.Identity
	// RemoveOnRelease removes the database file on release.
	RemoveOnRelease bool
}

// Lock is a held SQLite lock.
type Lock struct {
	fsys   lockfs.FS
	path   string
	conn   *sqlite3.Conn
	id     lockfs.FileID
	remove bool
	holder bool
}

// Busy is the error of an attempt that found the lock held.
type Busy struct {
	Path string
	// Record is what .holder says; nil when unknown.
	Record *Record
}

// Holder is the holder's identity, or nil when unknown.
func (b *Busy) Holder() *platform.Identity {
	if b.Record == nil {
		return nil
	}
	id := b.Record.Identity
	return &id
}

func (b *Busy) Error() string {
	if h := b.Holder(); h != nil {
		return fmt.Sprintf("sqlitelock: %s is held by %s", b.Path, h)
	}
	return fmt.Sprintf("sqlitelock: %s is held (holder unknown)", b.Path)
}

// Acquire makes one attempt to take the lock at path. It returns the
// lock, a *Busy error when another connection holds it, or another error.
//
// Before opening, it reads the identity (device, inode, birth time) of the
// file at path, and reads it again once locked: if the file changed or is
// gone (a holder releasing with RemoveOnRelease unlinked it), the attempt
// locked a file nobody will look at again, so it is dropped and made anew.
func Acquire(p *platform.Platform, path string, a Attempt) (*Lock, error) {
	for range maxSwaps {
		before, err := fileAt(p.FS, path)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
		conn, err := p.SQLite.Open(path, sqlite3.OPEN_READWRITE|sqlite3.OPEN_CREATE)
		if err != nil {
			return nil, openError(p.FS, path, err)
		}
		if err := takeLock(p, conn, a.First); err != nil {
			conn.Close()
			if errors.Is(err, sqlite3.BUSY) {
				return nil, &Busy{Path: path, Record: ReadHolder(p.FS, path)}
			}
			return nil, fmt.Errorf("sqlitelock: lock %s: %w", path, err)
		}
		after, err := p.FS.FileID(path)
		if err != nil || before == nil || !after.Same(*before) {
			conn.Close()
			continue
		}
		l := &Lock{fsys: p.FS, path: path, conn: conn, id: after, remove: a.RemoveOnRelease}
		if err := l.recordHolder(p, a.Self); err != nil {
			l.Release()
			return nil, err
		}
		return l, nil
	}
	return nil, fmt.Errorf("sqlitelock: lock %s: %w", path, errSwapped)
}

// errSwapped says the file at a lock's path kept changing under attempts.
var errSwapped = errors.New("the file at the path kept being replaced")

// fileAt reads the identity of the lock's file, refusing a directory and a
// symlink: SQLite would follow one, and create its target.
func fileAt(fsys lockfs.FS, path string) (*lockfs.FileID, error) {
	info, _, err := fsys.LstatIfPossible(path)
	if err != nil {
		return nil, err
	}
	switch {
	case info.IsDir():
		return nil, &fs.PathError{Op: "lock", Path: path, Err: lockfs.ErrIsDir}
	case info.Mode()&fs.ModeSymlink != 0:
		return nil, &fs.PathError{Op: "lock", Path: path, Err: ErrSymlink}
	}
	id, err := fsys.FileID(path)
	if err != nil {
		return nil, err
	}
	return &id, nil
}

// ErrSymlink is matched by the error for a symlink at a lock's path, which
// SQLite would follow.
var ErrSymlink = errors.New("lock path is a symlink")

// openError explains a failure to open the database at path.
func openError(fsys lockfs.FS, path string, err error) error {
	if _, ferr := fileAt(fsys, path); ferr != nil && !errors.Is(ferr, fs.ErrNotExist) {
		return ferr
	}
	return &fs.PathError{Op: "open", Path: path, Err: err}
}

// takeLock runs lockSQL on conn. A first attempt waits out BusyTimeout on
// the platform's clock and then retries a few times; a later one tries
// once.
func takeLock(p *platform.Platform, conn *sqlite3.Conn, first bool) error {
	clock := p.Time()
	if first {
		start := clock.Now()
		conn.BusyHandler(func(ctx context.Context, _ int) bool {
			if clock.Now().Sub(start) >= BusyTimeout {
				return false
			}
			return clock.Sleep(ctx, time.Millisecond) == nil
		})
	}
	err := conn.Exec(lockSQL)
	if !first {
		return err
	}
	conn.BusyHandler(nil)
	for range retries {
		if !errors.Is(err, sqlite3.BUSY) {
			return err
		}
		pause := retryMin + rand.N(retrySpread)
		if serr := clock.Sleep(context.Background(), pause); serr != nil {
			return err
		}
		err = conn.Exec(lockSQL)
	}
	return err
}
