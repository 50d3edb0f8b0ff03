package sqlitelock

import (
	"context"
	"errors"
	"io/fs"

	"github.com/proclock/proclock/internal/sqlapi"
	"github.com/proclock/proclock/lockfs"
	"github.com/proclock/proclock/platform"
)

// SQLite locks a database file with byte-range locks on bytes its file
// format sets aside for them (the lock-byte page, 1 GiB into the file,
// which a lock's one-page database never reaches): the pending byte, the
// reserved byte after it, and 510 shared bytes after that. A connection's
// exclusive lock is a write lock on all 512; a reader's shared lock is a
// read lock on the shared bytes, taken only while the pending byte is not
// write-locked (docs/design.md, "Locking without SQL").
const (
	pendingByte = 0x40000000
	lockBytes   = 2 + 510
)

// byteLocks returns the FS's byte-range locks where the platform's SQLite
// locks database files with those very locks (platform.SQLite.LocksBytes):
// the mechanism then takes SQLite's exclusive lock itself, the same locks
// on the same bytes as a connection's, so it excludes every connection to
// the file and is excluded by them, without opening one.
func byteLocks(p *platform.Platform) (lockfs.RangeLocker, bool) {
	if !p.SQLite.LocksBytes() {
		return nil, false
	}
	rl, ok := p.FS.(lockfs.RangeLocker)
	return rl, ok
}

// lockRange takes SQLite's exclusive lock on pin without waiting; BUSY
// (as SQLite would say) when another holds any part of it: a holder's
// exclusive lock, a reader's shared one, or a writer's reserved one.
func (l *Lock) lockRange(pin lockfs.File) error {
	got, err := l.ranged.TryLockRange(pin, pendingByte, lockBytes)
	switch {
	case err != nil:
		return err
	case !got:
		return sqlapi.SQLiteBusy
	}
	l.kept = pin
	return nil
}

// queueRange takes SQLite's exclusive lock on pin, waiting in the
// kernel's queue while another holds it (lockfs.RangeLocker's LockRange),
// on a goroutine of its own: the kernel's wait cannot be cut short. When
// ctx ends first, queueRange returns ctx's error at once and parks the
// wait: the goroutine keeps pin, and closes it the moment the lock is
// granted, which lets go of it unused; l.parkedDone is closed then.
func (l *Lock) queueRange(ctx context.Context, pin lockfs.File) error {
	if err := l.lockRange(pin); !errors.Is(err, sqlapi.SQLiteBusy) {
		return err
	}
	got, giveUp, done := make(chan error), make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		err := l.ranged.LockRange(pin, pendingByte, lockBytes)
		select {
		case got <- err:
		case <-giveUp:
			pin.Close()
		}
	}()
	select {
	case err := <-got:
		if err != nil {
			return err
		}
		l.kept = pin
		return nil
	case <-ctx.Done():
		close(giveUp)
		l.parked, l.parkedDone = true, done
		return ctx.Err()
	}
}

// ParkedError is the error of an attempt whose ctx ended while it waited
// in the kernel's queue (RetryQueue). It matches Err (ctx's error) and
// Held, the held error of the holder waited for (a *lockrec.HeldError,
// which the caller may replace with its own). The wait goes on until the
// lock is granted, and is let go of at once then, never held: Done is
// closed once it has.
type ParkedError struct {
	Err  error
	Held error
	Done <-chan struct{}
}

func (e *ParkedError) Error() string { return e.Err.Error() + " while waiting: " + e.Held.Error() }

func (e *ParkedError) Unwrap() []error { return []error{e.Err, e.Held} }

// rangeHeld reports whether another holds a lock on f that keeps
// SQLite's readers out (a pending or exclusive lock), as a read-only
// connection's attempt at a shared lock would find, or a reserved one.
func rangeHeld(rl lockfs.RangeLocker, f lockfs.File) (bool, error) {
	return rl.RangeWriteLocked(f, pendingByte, lockBytes)
}

// readOnlyRanged is the outcome of an attempt through byte-range locks
// on a lock file that could not be opened for writing (openErr): what a
// read-only look finds there when it is not a SQLite lock (a stamp, a
// file that is not a lock file, a symlink...); else held (a
// *lockrec.HeldError, naming the mark's holder) when the look finds it so;
// else ErrReadOnly when this user may not write it, or openErr.
func readOnlyRanged(p *platform.Platform, rl lockfs.RangeLocker, path string, openErr error) error {
	f, _, err := pinFile(p.FS, path, p.FS.OpenNoFollow, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	held, err := rangeHeld(rl, f)
	if err != nil {
		return &fs.PathError{Op: "lock", Path: path, Err: err}
	}
	if errors.Is(openErr, fs.ErrPermission) {
		openErr = &fs.PathError{Op: "lock", Path: path, Err: ErrReadOnly}
	}
	return heldOrElse(p, path, held, func() bool { return flockedOpen(p.FS, f) }, openErr)
}
