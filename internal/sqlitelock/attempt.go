package sqlitelock

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"time"

	"github.com/proclock/proclock/internal/fsx"
	"github.com/proclock/proclock/internal/lockrec"
	"github.com/proclock/proclock/internal/sqlapi"
	"github.com/proclock/proclock/lockfs"
	"github.com/proclock/proclock/platform"
)

// BusyTimeout is how long the first attempt of an acquisition waits for a
// busy lock before its short retries.
const BusyTimeout = 10 * time.Millisecond

// maxSwaps bounds the attempts dropped because the file at the path
// changed while being locked.
const maxSwaps = 8

// Retry says how an attempt meets a busy lock.
type Retry int

const (
	// RetryNone tries once.
	RetryNone Retry = iota
	// RetryBusy waits out BusyTimeout, then retries a few times 5–25 ms
	// apart: the first attempt of an acquisition.
	RetryBusy
	// RetryQueue waits in the kernel's queue where the byte-range locks
	// are taken, else is RetryBusy; ctx ending first gives a *ParkedError.
	RetryQueue
)

// Attempt says how to make one attempt.
type Attempt struct {
	Retry           Retry
	Self            *platform.Identity // written to the mark; nil: unknown
	RemoveOnRelease bool
	Conns           Conns
	// Guard takes the lock's guard, under which a dead holder's mark is
	// removed; nil without an identity.
	Guard func(ctx context.Context, path string) (interface{ Release() error }, error)
	// NoFlock leaves out the flock(2) lock: a network filesystem may make
	// it a POSIX lock that conflicts with SQLite's.
	NoFlock bool
}

// Lock is a held SQLite lock.
type Lock struct {
	p    *platform.Platform
	a    Attempt
	path string
	at   string // path made absolute when the attempt began: what Check judges
	name string // what SQLite opens the file by (sqliteName)
	// conn is lent by a.Conns; attached is set once the database is
	// attached to it, broken once a call into go-sqlite3 panicked on it.
	conn     sqlapi.SQLConn
	attached bool
	broken   bool
	id       lockfs.FileID // the pinned file's
	// kept is the pinned file while it holds the flock(2) lock (flocked)
	// or SQLite's byte-range locks (ranged, nil through SQL).
	kept     lockfs.File
	flocked  bool
	ranged   lockfs.RangeLocker
	released bool
	// parked is set once the attempt gave up its wait in the kernel's
	// queue: the waiting goroutine closes the pinned file, then parked.
	parked <-chan struct{}
	nonce  string // of this holder's mark, once written
	held   bool
	// markLost: Check saw the lock lost; the mark may be another's now.
	markLost bool
	// dir is the lock's directory, kept from the attempt to Release, so
	// that Release acts on the files locked (docs/protocol.md).
	dir fsx.Dir
}

// At is the lock's path made absolute when it was taken.
func (l *Lock) At() string { return l.at }

// fileID identifies the file at the lock's path, in the directory kept.
func (l *Lock) fileID() (lockfs.FileID, error) {
	return l.dir.FileID(filepath.Base(l.path))
}

// removeName removes the lock's file or sidecar at name, in the directory
// kept, if it is there.
func (l *Lock) removeName(name string) error {
	return removeIfThere(l.dir, filepath.Base(name))
}

// ErrStamped is matched by the error of an attempt or a probe that found a
// stamp (or a torn one) at the path, or saw one written into the file it
// locked: the caller judges it (docs/protocol.md).
var ErrStamped = errors.New("sqlitelock: a stamp is at the lock's path")

// Acquire makes one attempt to take the lock at path; ctx cuts its waits
// short. The file is pinned (kept open) before it is locked, and the path
// must still name it after, else the attempt is made anew: a holder with
// RemoveOnRelease unlinks its file while holding it (docs/design.md, "The
// pinned inode").
func Acquire(ctx context.Context, p *platform.Platform, path string, a Attempt) (*Lock, error) {
	for range maxSwaps {
		l, err := attempt(ctx, p, path, a)
		if !errors.Is(err, errSwapped) {
			return l, err
		}
	}
	// Holders keep taking the lock and removing its file as they let go.
	return nil, lockrec.HeldBy(path, lockrec.ReadHolder(p.FS, path))
}

// errSwapped says the file at the path changed during an attempt.
var errSwapped = errors.New("sqlitelock: the file at the path changed during the attempt")

func attempt(ctx context.Context, p *platform.Platform, path string, a Attempt) (*Lock, error) {
	l := &Lock{p: p, a: a, path: path, at: fsx.Abs(p.FS, path), name: path}
	open := p.FS.OpenNoFollow
	if rl, ok := byteLocks(p); ok {
		l.ranged, open = rl, rl.OpenLockable // a write lock needs the file open for writing
	} else {
		name, done, err := sqliteName(p, path, "lock")
		if err != nil {
			return nil, err
		}
		defer done()
		l.name = name
	}
	pin, err := l.pin(open)
	if err != nil {
		return nil, err
	}
	defer func() {
		if (l.kept != pin || !l.held) && l.parked == nil {
			pin.Close() // drops the locks on it
		}
		if !l.held {
			l.dir.Close()
		}
	}()
	if l.ranged == nil {
		conn, err := a.Conns.Get()
		if err != nil {
			return nil, &fs.PathError{Op: "lock", Path: path, Err: err}
		}
		l.conn = conn
	}
	if err := l.take(ctx, pin); err != nil {
		l.detach()
		return nil, l.notTaken(err)
	}
	if err := l.settle(ctx, pin); err != nil {
		return nil, err
	}
	l.held = true
	return l, nil
}

// pin pins the lock's file, opened with open (pinFile), and keeps its
// directory.
func (l *Lock) pin(open func(string) (lockfs.File, error)) (lockfs.File, error) {
	pin, pinned, err := pinFile(l.p.FS, l.path, open, l.a.Self)
	if l.ranged != nil && err != nil && !errors.Is(err, fs.ErrNotExist) {
		// Not to be opened for writing: what is there, by a look.
		return nil, readOnly(l.p, l.a.Conns, l.path, err)
	}
	if err != nil {
		return nil, err
	}
	l.id = pinned
	if l.dir, err = fsx.KeepDir(l.p.FS, filepath.Dir(l.path)); err != nil {
		pin.Close()
		return nil, err
	}
	return pin, nil
}

// settle takes the steps after SQLite's lock is taken on pin
// (docs/protocol.md, "The steps").
func (l *Lock) settle(ctx context.Context, pin lockfs.File) error {
	if now, err := l.fileID(); err != nil || !now.SameOpen(l.id) {
		l.detach()
		return errSwapped
	}
	err := l.flock(ctx, pin)
	if err == nil {
		err = l.mark(ctx)
	}
	if err != nil {
		l.detach()
		return err
	}
	// A stamp written from now on is followed by its writer's look at
	// the mark; one written before has changed the file's size.
	if stamped, err := stampedSince(pin); err != nil || stamped {
		if err := errors.Join(err, l.unmark(), l.detach()); err != nil {
			return err
		}
		return &fs.PathError{Op: "lock", Path: l.path, Err: ErrStamped}
	}
	return nil
}

// notTaken is the outcome of an attempt whose take failed with err.
func (l *Lock) notTaken(err error) error {
	p, path := l.p, l.path
	switch {
	case l.parked != nil:
		return &ParkedError{Err: err, Held: lockrec.HeldBy(path, liveHolder(p, l.a.Self, path)), Done: l.parked}
	case errors.Is(err, sqlapi.SQLiteBusy):
		return lockrec.HeldBy(path, liveHolder(p, l.a.Self, path))
	case !l.attached && errors.Is(err, fs.ErrPermission):
		// Readable (it is pinned) but not writable by this user.
		return readOnly(p, l.a.Conns, path, err)
	case errors.Is(err, sqlapi.SQLiteNotADB) || errors.Is(err, sqlapi.SQLiteCorrupt):
		// Stamped since it was pinned: for the caller to judge.
		return &fs.PathError{Op: "lock", Path: path, Err: ErrStamped}
	case !l.attached:
		err = openError(p.FS, path, err)
		if errors.Is(err, fs.ErrNotExist) || fsx.InUse(err) {
			// Removed, or being removed (windows), by a releasing holder.
			return errSwapped
		}
		return err
	}
	return &fs.PathError{Op: "lock", Path: path, Err: err}
}

// flock takes a flock(2) lock on the pinned file, where the FS has them,
// so that flock(1) and proclock exclude each other (docs/design.md,
// "flock(1)"). A first attempt waits out an IsHeld's for up to
// BusyTimeout; a filesystem that refuses flock(2) goes without.
func (l *Lock) flock(ctx context.Context, pin lockfs.File) error {
	fl, ok := l.p.FS.(fsx.Flocker)
	if !ok || l.a.NoFlock {
		return nil
	}
	clock := l.p.Time()
	start := clock.Now()
	for {
		got, err := fl.TryFlock(pin, true)
		switch {
		case err != nil:
			return nil
		case got:
			l.kept, l.flocked = pin, true
			return nil
		}
		if l.a.Retry != RetryBusy || clock.Now().Sub(start) >= BusyTimeout || clock.Sleep(ctx, time.Millisecond) != nil {
			return &lockrec.HeldError{Path: l.path, Reason: lockrec.FlockReason}
		}
	}
}

// readOnly is the outcome of an attempt that could not open or attach its
// file for writing (err), by a look that writes nothing.
func readOnly(p *platform.Platform, conns Conns, path string, err error) error {
	state, why, perr := Probe(p, conns, path)
	switch {
	case perr != nil:
		return perr
	case state == lockrec.StateAbsent:
		return err // as it failed to be created
	case state == lockrec.StateHeld && why != "":
		return &lockrec.HeldError{Path: path, Reason: why}
	case state == lockrec.StateHeld:
		return lockrec.HeldBy(path, lockrec.ReadHolder(p.FS, path))
	case errors.Is(err, fs.ErrPermission):
		return &fs.PathError{Op: "lock", Path: path, Err: ErrReadOnly}
	}
	return err
}

// ErrReadOnly is matched by the error of an attempt on a free lock whose
// file this user can read but not write. It matches fs.ErrPermission.
var ErrReadOnly = lockrec.ErrReadOnly

// pinFile opens the file at path with open (which never follows a
// symlink), or creates it, and returns it with its identity. Anything but
// a regular file with a SQLite lock's bytes is an error.
func pinFile(fsys lockfs.FS, path string, open func(string) (lockfs.File, error), self *platform.Identity) (lockfs.File, lockfs.FileID, error) {
	for range maxSwaps {
		f, err := open(path)
		if errors.Is(err, fs.ErrNotExist) {
			pid := 0 // names this process's temporary file
			if self != nil {
				pid = self.PID
			}
			var placed bool
			f, placed, err = lockrec.CreateWhole(fsys, path, lockrec.EmptyDatabase(), pid)
			if err != nil && placed {
				// Emptied, never removed: another SQLite process may have
				// locked it already (docs/protocol.md, "The path keeps its
				// inode while a SQLite process holds it").
				f.Truncate(0)
				f.Close()
			}
			if errors.Is(err, fs.ErrExist) {
				continue // created by another process meanwhile
			}
		}
		if err != nil {
			if kerr := checkKind(fsys, path); kerr != nil && !errors.Is(kerr, fs.ErrNotExist) {
				return nil, lockfs.FileID{}, kerr
			}
			return nil, lockfs.FileID{}, err
		}
		id, err := identify(fsys, f, path)
		if err != nil {
			f.Close()
			return nil, lockfs.FileID{}, err
		}
		return f, id, nil
	}
	return nil, lockfs.FileID{}, errSwapped
}

// identify is the identity of f, open at path, when it is a regular file
// with a SQLite lock's bytes: a stamp, or someone's database, is never
// attached.
func identify(fsys lockfs.FS, f lockfs.File, path string) (lockfs.FileID, error) {
	info, err := f.Stat()
	if err == nil {
		err = kindError(info, path)
	}
	if err != nil {
		return lockfs.FileID{}, err
	}
	id, err := fsys.FileIDOf(f)
	if err == nil && info.Size() != 0 {
		var kind lockrec.Kind
		if kind, _, err = lockrec.ReadOpen(f); err == nil {
			err = contentError(kind, "lock", path)
		}
	}
	return id, err
}

// errNotRegular is matched by the error for a FIFO, socket or device at a
// lock's path; it matches lockrec.ErrNotLockFile too.
var errNotRegular = fmt.Errorf("not a regular file: %w", lockrec.ErrNotLockFile)

// stampedSince reports whether the pinned file no longer holds a SQLite
// lock's bytes, reading it only when its size says it may not (a stamp is
// never lockrec.DatabaseSize long).
func stampedSince(f lockfs.File) (bool, error) {
	info, err := f.Stat()
	if err != nil || info.Size() == 0 || info.Size() == lockrec.DatabaseSize {
		return false, err
	}
	kind, _, err := lockrec.ReadOpen(f)
	return kind != lockrec.Empty && kind != lockrec.SQLite, err
}

// contentError fails for bytes of kind that are not a SQLite lock's: a
// stamp (ErrStamped, for the caller to judge) or what is no lock file.
func contentError(kind lockrec.Kind, op, path string) error {
	switch kind {
	case lockrec.Empty, lockrec.SQLite:
		return nil
	case lockrec.Stamp, lockrec.Torn:
		return &fs.PathError{Op: op, Path: path, Err: ErrStamped}
	}
	return &fs.PathError{Op: op, Path: path, Err: lockrec.ErrNotLockFile}
}

// checkKind fails for anything at path but a regular file.
func checkKind(fsys lockfs.FS, path string) error {
	info, err := fsys.Lstat(path)
	if err != nil {
		return err
	}
	return kindError(info, path)
}

// kindError fails for what is not a regular file.
func kindError(info fs.FileInfo, path string) error {
	err := errNotRegular
	switch {
	case info.Mode().IsRegular():
		return nil
	case info.IsDir():
		err = lockfs.ErrIsDir
	case info.Mode()&fs.ModeSymlink != 0:
		err = ErrSymlink
	}
	return &fs.PathError{Op: "lock", Path: path, Err: err}
}

// ErrSymlink is matched by the error for a symlink at a lock's path,
// which is never followed. It matches lockrec.ErrNotLockFile too.
var ErrSymlink = fmt.Errorf("lock path is a symlink: %w", lockrec.ErrNotLockFile)

// openError explains a failure to open the database at path.
func openError(fsys lockfs.FS, path string, err error) error {
	if ferr := checkKind(fsys, path); ferr != nil {
		return ferr
	}
	return &fs.PathError{Op: "open", Path: path, Err: err}
}

// LivePID is holder's pid when it runs on this host, boot and pid
// namespace for certain, else 0: the process a wait may watch.
func LivePID(p *platform.Platform, holder *platform.Identity) int {
	if holder == nil || p.Process == nil {
		return 0
	}
	here, err := p.Process.Self()
	if err != nil || platform.Judge(here, *holder, p.Process.Lookup).Reason != platform.ReasonRunning {
		return 0
	}
	return holder.PID
}
