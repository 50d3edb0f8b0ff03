package sqlitelock

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"time"

	"github.com/proclock/proclock/internal/fsx"
	"github.com/proclock/proclock/internal/lockrec"
	"github.com/proclock/proclock/internal/sqlapi"
	"github.com/proclock/proclock/internal/wake"
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

// afterWake is how long a first attempt waits before trying again once a
// holder was seen letting go: it drops the kernel's lock a moment after
// it removes its mark.
const afterWake = 100 * time.Microsecond

// maxSwaps bounds the attempts dropped because the file at the path
// changed while it was being locked.
const maxSwaps = 8

// The lock's database is attached to a borrowed connection under this
// schema name.
const schema = "lock"

// lockSQL takes the lock: no journal is ever written, the open exclusive
// transaction holds it, and exclusive locking mode keeps it until the
// database is detached. The mode is set last: set first, an attempt that
// fails at BEGIN would keep its shared lock through its busy wait and
// retries, and stall the attempt that is winning.
const lockSQL = `PRAGMA lock.journal_mode=OFF; BEGIN EXCLUSIVE; PRAGMA lock.locking_mode=EXCLUSIVE;`

// lockExclusiveSQL is lockSQL for a connection already in exclusive
// locking mode for the databases it attaches (ConnCache's): the attach
// kept its shared lock, BEGIN EXCLUSIVE goes on from it, and take lets go
// of it (detaching) before any wait, so that it stalls nobody.
const lockExclusiveSQL = `PRAGMA lock.journal_mode=OFF; BEGIN EXCLUSIVE;`

// Conns lends connections that have no database of their own (in-memory
// ones, opened by the platform's SQLite: sqlapi.SQLConnector), to attach
// a lock's database to. Opening a connection costs far more than
// attaching a file, so the root package keeps a few idle ones.
type Conns interface {
	Get() (sqlapi.SQLConn, error)
	// Put takes back a connection with nothing attached.
	Put(sqlapi.SQLConn)
}

// Retry says how an attempt meets a busy lock.
type Retry int

const (
	// RetryNone tries once.
	RetryNone Retry = iota
	// RetryBusy waits out BusyTimeout on the platform's clock, then
	// retries a few times, 5–25 ms apart: the first attempt of an
	// acquisition, which rides out a probe or a holder that is just
	// letting go.
	RetryBusy
	// RetryQueue waits in the kernel's queue until the lock is granted,
	// where the FS's byte-range locks take SQLite's (elsewhere it is
	// RetryBusy): a waiting acquisition's attempt (docs/design.md,
	// "Waiting"). ctx ending first gives a *ParkedError.
	RetryQueue
)

// Attempt says how to make one attempt.
type Attempt struct {
	// Retry is how the attempt meets a busy lock.
	Retry Retry
	// Self is this process's identity, written to .holder; nil when
	// unknown.
	Self *platform.Identity
	// RemoveOnRelease removes the database file on release.
	RemoveOnRelease bool
	// Conns lends the connection.
	Conns Conns
	// Guard takes the lock's guard (docs/protocol.md), under which a
	// dead holder's mark is removed, and returns its release; nil (this
	// process's identity unknown) removes such marks without it.
	Guard func(ctx context.Context, path string) (release func(), err error)
	// NoFlock leaves out the flock(2) lock the attempt takes beside
	// SQLite's where the FS can (fsx.Flocker): for a network
	// filesystem, which may make flock(2) a POSIX lock that conflicts with
	// SQLite's own.
	NoFlock bool
}

// Lock is a held SQLite lock.
type Lock struct {
	fsys lockfs.FS
	path string
	// at is path made absolute when the attempt began (fsx.Abs): the
	// lock is judged (Check) by what it names, whatever the process's
	// working directory is later.
	at string
	// name is what SQLite opens the file at path by (sqliteName).
	name  string
	conn  sqlapi.SQLConn
	conns Conns
	// attached is set once the database is attached to conn.
	attached bool
	// broken is set when a call into go-sqlite3 panicked on conn: it is
	// closed, never given back.
	broken bool
	id     lockfs.FileID
	remove bool
	// guard takes the lock's guard (Attempt.Guard), for a removal after
	// letting go (removeUnopened); nil without an identity.
	guard func(ctx context.Context, path string) (release func(), err error)
	// kept is the pinned file, kept open while the lock is held for the
	// locks on it: the flock(2) lock (flocked), and SQLite's own where it
	// is taken without a connection (ranged); nil when neither is on it.
	kept    lockfs.File
	flocked bool
	// ranged takes SQLite's lock as byte-range locks on the pinned file,
	// without a connection (byteLocks); nil: through SQL on conn.
	ranged lockfs.RangeLocker
	// released is set by Release.
	released bool
	// parked is set when the attempt gave up its wait in the kernel's
	// queue (queueRange): the pinned file is the waiting goroutine's to
	// close, and parkedDone is closed once it has.
	parked     bool
	parkedDone <-chan struct{}
	// nonce is this holder's mark's, once it is written.
	nonce string
	// held is set once the attempt has succeeded: nobody else removes
	// the mark of a holder, so its release need not read it first.
	held bool
	// markLost is set by Check once it saw the lock lost: the mark may
	// be gone, and another's by the release, which reads it first.
	markLost bool
	// dir is the lock's directory, kept from the start of the attempt
	// to Release: the file at the path is checked, and the lock's files
	// removed, through it, so that Release acts on the files locked
	// even once the path names others (a working directory changed, a
	// symlink in the path flipped).
	dir fsx.Dir
}

// At is the lock's path made absolute when it was taken: where Check
// looks.
func (l *Lock) At() string { return l.at }

// fileID identifies the file at the lock's path, in the directory kept.
func (l *Lock) fileID() (lockfs.FileID, error) {
	return l.dir.FileID(filepath.Base(l.path))
}

// removeName removes the lock's file or sidecar at name, in the directory
// kept; one that is gone is no error.
func (l *Lock) removeName(name string) error {
	return removeIfThere(l.dir, filepath.Base(name))
}

// ErrStamped is matched by the error of an attempt or a probe that found a
// stamp (or a torn one) at the path, or of an attempt that saw one written
// into the file it locked: the lock is the file mechanism's for now, and
// the caller judges the stamp (docs/protocol.md).
var ErrStamped = errors.New("sqlitelock: a stamp is at the lock's path")

// Acquire makes one attempt to take the lock at path. It returns the
// lock, a *lockrec.HeldError (proclock.HeldError) when another connection
// holds it, or another error. ctx cuts the attempt's waiting short
// (a.Retry, a dead holder's mark's guard).
//
// A holder that releases with RemoveOnRelease unlinks the file while still
// holding it, so a waiter may open, and then lock, a file that is no longer
// at the path. To tell, Acquire opens (or creates) the file at path itself
// before SQLite does and keeps it open, which pins its inode (no new file
// can take its number), and once locked checks that the file at path is
// still that one. If it is not, the attempt is dropped and made anew.
func Acquire(ctx context.Context, p *platform.Platform, path string, a Attempt) (*Lock, error) {
	for range maxSwaps {
		l, err := attempt(ctx, p, path, a)
		if !errors.Is(err, errSwapped) {
			return l, err
		}
	}
	// Holders keep taking the lock and removing its file as they let
	// go: it is busy.
	return nil, &lockrec.HeldError{Path: path, Holder: lockrec.ReadHolder(p.FS, path).Holder()}
}

// errSwapped says the file at the path changed during an attempt.
var errSwapped = errors.New("sqlitelock: the file at the path changed during the attempt")

func attempt(ctx context.Context, p *platform.Platform, path string, a Attempt) (*Lock, error) {
	rl, direct := byteLocks(p)
	if direct {
		return attemptWith(ctx, p, path, a, rl, path)
	}
	if err := noSQLPath(p); err != nil {
		return nil, &fs.PathError{Op: "lock", Path: path, Err: err}
	}
	name, done, err := sqliteName(p, path)
	if err != nil {
		return nil, err
	}
	defer done()
	return attemptWith(ctx, p, path, a, nil, name)
}

// attemptWith is attempt, taking SQLite's lock through rl when it is not
// nil, else through SQL on a borrowed connection that opens the file by
// name.
func attemptWith(ctx context.Context, p *platform.Platform, path string, a Attempt, rl lockfs.RangeLocker, name string) (*Lock, error) {
	open := p.FS.OpenNoFollow
	if rl != nil {
		open = rl.OpenLockable // a write lock needs the file open for writing
	}
	pin, pinned, err := pinFile(p.FS, path, open, selfPID(a.Self))
	if rl != nil && err != nil && !errors.Is(err, fs.ErrNotExist) {
		// Not to be opened for writing (this user may not, a read-only
		// filesystem, a running program): what is there, by a look that
		// writes nothing.
		return nil, readOnlyRanged(p, rl, path, err)
	}
	if err != nil {
		return nil, err
	}
	dir, err := fsx.KeepDir(p.FS, filepath.Dir(path))
	if err != nil {
		pin.Close()
		return nil, err
	}
	l := &Lock{fsys: p.FS, path: path, at: fsx.Abs(p.FS, path), name: name, conns: a.Conns, id: pinned, remove: a.RemoveOnRelease, guard: a.Guard, ranged: rl, dir: dir}
	defer func() {
		if (l.kept != pin || !l.held) && !l.parked {
			pin.Close() // drops the locks on it
		}
		if !l.held {
			dir.Close()
		}
	}()
	if rl == nil {
		conn, err := a.Conns.Get()
		if err != nil {
			return nil, &fs.PathError{Op: "lock", Path: path, Err: err}
		}
		l.conn = conn
	}
	if err := l.take(ctx, p, a.Retry, pin); err != nil {
		l.detach()
		return nil, l.notTaken(p, a, err)
	}
	if err := l.settle(ctx, p, a, pin, pinned); err != nil {
		return nil, err
	}
	l.held = true
	return l, nil
}

// settle takes the steps after SQLite's lock is taken on pin (pinned):
// the path still names it, the flock(2) lock, the mark, and no stamp
// written into it meanwhile (docs/protocol.md, "The steps").
func (l *Lock) settle(ctx context.Context, p *platform.Platform, a Attempt, pin lockfs.File, pinned lockfs.FileID) error {
	if now, err := l.fileID(); err != nil || !now.SameOpen(pinned) {
		l.detach()
		return errSwapped
	}
	if err := l.flock(ctx, p, a, pin); err != nil {
		l.detach()
		return err
	}
	if err := l.mark(ctx, p, a); err != nil {
		l.detach()
		return err
	}
	// The mark is written: a stamp written from now on is followed by its
	// writer's look at the mark. One written before is in the file now,
	// and has changed its size (a stamp is never lockrec.DatabaseSize long).
	if kind, err := stampedSince(pin); err != nil || (kind != lockrec.Empty && kind != lockrec.SQLite) {
		if err := errors.Join(err, l.unmark(), l.detach()); err != nil {
			return err
		}
		return &fs.PathError{Op: "lock", Path: l.path, Err: ErrStamped}
	}
	return nil
}

// notTaken is the outcome of an attempt whose take failed with err.
func (l *Lock) notTaken(p *platform.Platform, a Attempt, err error) error {
	path := l.path
	switch {
	case l.parked:
		return &ParkedError{Err: err, Held: &lockrec.HeldError{Path: path, Holder: liveHolder(p, a.Self, path).Holder()}, Done: l.parkedDone}
	case errors.Is(err, sqlapi.SQLiteBusy):
		return &lockrec.HeldError{Path: path, Holder: liveHolder(p, a.Self, path).Holder()}
	case !l.attached && errors.Is(err, fs.ErrPermission):
		// Readable (it is pinned) but not writable by this user: still
		// held or free, by a look that writes nothing.
		return readOnlyVerdict(p, a.Conns, path, l.name)
	case errors.Is(err, sqlapi.SQLiteNotADB) || errors.Is(err, sqlapi.SQLiteCorrupt):
		// Stamped since it was pinned, or being rewritten by a
		// file-mechanism process: for the caller to judge.
		return &fs.PathError{Op: "lock", Path: path, Err: ErrStamped}
	case !l.attached:
		err = openError(p.FS, path, err)
		if errors.Is(err, fs.ErrNotExist) || fsx.InUse(err) {
			// Removed by a releasing holder while opening, or being
			// removed (windows: open for deleting).
			return errSwapped
		}
		return err
	}
	return &fs.PathError{Op: "lock", Path: path, Err: err}
}

// flockReason is why a lock held by a flock(2) lock has no known holder
// (proclock.HeldError.Reason, Status.Reason).
const flockReason = lockrec.FlockReason

// flock takes a flock(2) lock on the pinned file, beside SQLite's, where
// the FS has them (fsx.Flocker), so that flock(1) and proclock exclude
// each other (docs/design.md, "flock(1)"). It is taken once SQLite's lock
// is, so two proclock processes never meet at it: only a flock(1) holder,
// or an IsHeld's brief shared lock, which a first attempt waits out for up
// to BusyTimeout (RetryBusy). A filesystem that refuses flock(2) (an error other than
// a conflict) goes without it: SQLite's lock is the lock.
func (l *Lock) flock(ctx context.Context, p *platform.Platform, a Attempt, pin lockfs.File) error {
	fl, ok := p.FS.(fsx.Flocker)
	if !ok || a.NoFlock {
		return nil
	}
	clock := p.Time()
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
		if a.Retry != RetryBusy || clock.Now().Sub(start) >= BusyTimeout || clock.Sleep(ctx, time.Millisecond) != nil {
			return &lockrec.HeldError{Path: l.path, Reason: flockReason}
		}
	}
}

// flockHeld reports whether a flock(2) lock that conflicts with a shared
// one is on the file at path: flock(1)'s, as a probe that writes nothing
// sees it.
func flockHeld(fsys lockfs.FS, path string) bool {
	fl, ok := fsys.(fsx.Flocker)
	if !ok {
		return false
	}
	f, err := fsys.OpenNoFollow(path)
	if err != nil {
		return false
	}
	defer f.Close()
	got, err := fl.TryFlock(f, false)
	return err == nil && !got
}

// flockedOpen is flockHeld, of a file already open.
func flockedOpen(fsys lockfs.FS, f lockfs.File) bool {
	fl, ok := fsys.(fsx.Flocker)
	if !ok {
		return false
	}
	got, err := fl.TryFlock(f, false)
	return err == nil && !got // a lock got is let go of as f is closed
}

// sqliteName is the name SQLite is to open the file at path by, within its
// pathname limit (sqlapi.SQLiteNamer), and the function that ends the
// name's life once SQLite has opened the file. A path over the limit that
// the platform cannot name shorter is refused (lockrec.ErrPathTooLong)
// before anything is created.
func sqliteName(p *platform.Platform, path string) (string, func(), error) {
	if n, ok := p.SQLite.(sqlapi.SQLiteNamer); ok {
		name, done, err := n.SQLiteName(path)
		if errors.Is(err, sqlapi.ErrSQLitePathTooLong) {
			return "", nil, tooLongForSQLite(path)
		}
		if err != nil {
			return "", nil, err
		}
		return name, done, nil
	}
	if len(path) > sqlapi.MaxSQLitePath {
		return "", nil, tooLongForSQLite(path)
	}
	return path, func() {}, nil
}

func tooLongForSQLite(path string) error {
	return &lockrec.TooLongError{Why: fmt.Sprintf(
		"the path is %d bytes, and SQLite takes at most %d (made absolute) and cannot be given a shorter name for it on this system; the file mechanism takes it",
		len(path), sqlapi.MaxSQLitePath)}
}

// readOnlyVerdict is the outcome of an attempt on a lock file this user
// can read but not write: held (a *lockrec.HeldError, naming the mark's
// holder) when a
// read-only look finds it so, else ErrReadOnly.
func readOnlyVerdict(p *platform.Platform, conns Conns, path, name string) error {
	conn, err := conns.Get()
	if err != nil {
		return &fs.PathError{Op: "lock", Path: path, Err: err}
	}
	state, err := probeConn(conn, name)
	putProbed(conns, conn, state, err)
	if err != nil {
		return openError(p.FS, path, err)
	}
	return heldOrElse(p, path, state == lockrec.StateHeld, func() bool { return flockHeld(p.FS, path) },
		&fs.PathError{Op: "lock", Path: path, Err: ErrReadOnly})
}

// heldOrElse is the outcome of a look that writes nothing at a lock this
// attempt cannot take for another reason (otherwise): held (a
// *lockrec.HeldError, naming the mark's holder) when SQLite's lock is
// held, or when flocked says a flock(2) lock is; else otherwise.
func heldOrElse(p *platform.Platform, path string, held bool, flocked func() bool, otherwise error) error {
	switch {
	case held:
		return &lockrec.HeldError{Path: path, Holder: lockrec.ReadHolder(p.FS, path).Holder()}
	case flocked():
		return &lockrec.HeldError{Path: path, Reason: flockReason}
	}
	return otherwise
}

// ErrReadOnly is matched by the error of an attempt on a free or stale
// lock whose file this user can read but not write, on either mechanism.
// It matches fs.ErrPermission too. (A held one gives a *lockrec.HeldError
// as for anyone.)
var ErrReadOnly = lockrec.ErrReadOnly

// attachSQL attaches the database SQLite knows by name (sqliteName) to a
// borrowed connection, to read and write it or only to read it, never to
// create it: proclock creates the file (pinFile), with its own mode.
// Attaching reads the schema, so it fails with BUSY against a holder.
func attachSQL(name string, readOnly bool) string {
	return "ATTACH DATABASE " + quote(fileURI(name, readOnly)) + " AS " + schema
}

// quote is s as a SQL string literal. (A lock's path has no NUL byte: the
// FS refuses one before SQLite sees it.)
func quote(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

// fileURI names path as a SQLite URI filename, so that no character of the
// path is taken for URI syntax. The VFS opens the URI's path as it is, so
// a windows drive letter comes first ("file:C:/dir/app.lock"), where
// SQLite's own windows VFS would also take "file:///C:/..." but
// go-sqlite3's would open "\C:\..." on the current drive; a UNC path
// keeps its two slashes after the empty authority ("file:////host/share").
func fileURI(path string, readOnly bool) string {
	p := filepath.ToSlash(path)
	var b strings.Builder
	b.WriteString("file:")
	if strings.HasPrefix(p, "/") {
		b.WriteString("//") // an empty authority, before an absolute path
	}
	for _, c := range []byte(p) {
		switch c {
		case '%', '?', '#':
			fmt.Fprintf(&b, "%%%02X", c)
		default:
			b.WriteByte(c)
		}
	}
	if readOnly {
		b.WriteString("?mode=ro")
	} else {
		b.WriteString("?mode=rw")
	}
	return b.String()
}

// pinFile opens the file at path with open (which never follows a
// symlink), creating it (never through a symlink) when there is none, and
// returns it with its identity. A directory, a symlink or any other kind
// of file than a regular one is an error.
func pinFile(fsys lockfs.FS, path string, open func(string) (lockfs.File, error), pid int) (lockfs.File, lockfs.FileID, error) {
	for range maxSwaps {
		f, err := open(path)
		if errors.Is(err, fs.ErrNotExist) {
			f, err = createDatabase(fsys, path, pid)
			if errors.Is(err, fs.ErrExist) {
				continue // created by another process meanwhile: open that one
			}
		}
		if err != nil {
			if kerr := checkKind(fsys, path); kerr != nil && !errors.Is(kerr, fs.ErrNotExist) {
				return nil, lockfs.FileID{}, kerr
			}
			return nil, lockfs.FileID{}, err
		}
		id, size, err := identify(fsys, f, path)
		if err == nil && size != 0 {
			// Read, unless empty: a stamp, or a file that is not a
			// lock file (someone's database, as much as anything
			// else), is never attached.
			err = checkContent(f, path)
		}
		if err != nil {
			f.Close()
			return nil, lockfs.FileID{}, err
		}
		return f, id, nil
	}
	return nil, lockfs.FileID{}, errSwapped
}

// createDatabase creates the lock's file, never through a symlink, as an
// empty SQLite database (lockrec.EmptyDatabase), whole before it appears
// at the path (lockrec.CreateWhole, as the writer pid): a file only SQLite
// processes write, which file-mechanism processes can tell from a stamp on
// its way (docs/protocol.md). Without hard links, a file whose database
// cannot be written is left at the path, emptied if it can be, never
// removed: only holders remove the path, and while it was empty another
// SQLite process may have locked it, checked that the path names it, and
// be about to mark it (docs/protocol.md, "The path keeps its inode while a
// SQLite process holds it"). Empty, it is a lock file like any other.
func createDatabase(fsys lockfs.FS, path string, pid int) (lockfs.File, error) {
	// Read-write: the attempt reads it again once marked (a stamp may
	// have been written into it).
	f, placed, err := lockrec.CreateWhole(fsys, path, lockrec.EmptyDatabase(), pid)
	if err != nil {
		if placed {
			f.Truncate(0) // a part of a database reads as torn for 30 s
			f.Close()
		}
		return nil, err
	}
	return f, nil
}

// selfPID is the pid of self, 0 when unknown: what names this process's
// temporary files.
func selfPID(self *platform.Identity) int {
	if self == nil {
		return 0
	}
	return self.PID
}

// identify checks that f is a regular file and returns its identity and
// size.
func identify(fsys lockfs.FS, f lockfs.File, path string) (lockfs.FileID, int64, error) {
	info, err := f.Stat()
	switch {
	case err != nil:
		return lockfs.FileID{}, 0, err
	case info.IsDir():
		return lockfs.FileID{}, 0, &fs.PathError{Op: "lock", Path: path, Err: lockfs.ErrIsDir}
	case !info.Mode().IsRegular():
		return lockfs.FileID{}, 0, &fs.PathError{Op: "lock", Path: path, Err: errNotRegular}
	}
	id, err := fsys.FileIDOf(f)
	return id, info.Size(), err
}

// errNotRegular is matched by the error for a FIFO, socket or device at a
// lock's path: not a lock file (it matches lockrec.ErrNotLockFile too).
var errNotRegular = fmt.Errorf("not a regular file: %w", lockrec.ErrNotLockFile)

// stampedSince tells what the pinned file holds now: a stat, and a read
// only when its size is not a SQLite lock's.
func stampedSince(f lockfs.File) (lockrec.Kind, error) {
	info, err := f.Stat()
	if err != nil {
		return lockrec.Foreign, err
	}
	if info.Size() == 0 {
		return lockrec.Empty, nil
	}
	if info.Size() == lockrec.DatabaseSize {
		return lockrec.SQLite, nil
	}
	kind, _, err := lockrec.ReadOpen(f)
	return kind, err
}

// checkContent fails for a file whose bytes are not a SQLite lock: a stamp
// (ErrStamped, for the caller to judge) or anything that is not a lock
// file (lockrec.ErrNotLockFile).
func checkContent(f lockfs.File, path string) error {
	kind, _, err := lockrec.ReadOpen(f)
	switch {
	case err != nil:
		return err
	case kind == lockrec.Empty || kind == lockrec.SQLite:
		return nil
	case kind == lockrec.Stamp || kind == lockrec.Torn:
		return &fs.PathError{Op: "lock", Path: path, Err: ErrStamped}
	}
	return &fs.PathError{Op: "lock", Path: path, Err: lockrec.ErrNotLockFile}
}

// checkKind fails for a directory, a symlink or any other file that is
// not a regular one at path (a socket, which open(2) refuses with ENXIO),
// and for a path that does not exist (fs.ErrNotExist).
func checkKind(fsys lockfs.FS, path string) error {
	info, err := fsys.Lstat(path)
	switch {
	case err != nil:
		return err
	case info.IsDir():
		return &fs.PathError{Op: "lock", Path: path, Err: lockfs.ErrIsDir}
	case info.Mode()&fs.ModeSymlink != 0:
		return &fs.PathError{Op: "lock", Path: path, Err: ErrSymlink}
	case !info.Mode().IsRegular():
		return &fs.PathError{Op: "lock", Path: path, Err: errNotRegular}
	}
	return nil
}

// ErrSymlink is matched by the error for a symlink at a lock's path: a
// lock is the file at the path, never what a link there names. It matches
// lockrec.ErrNotLockFile too.
var ErrSymlink = fmt.Errorf("lock path is a symlink: %w", lockrec.ErrNotLockFile)

// openError explains a failure to open the database at path.
// A file that went missing is fs.ErrNotExist, for the caller to retry.
func openError(fsys lockfs.FS, path string, err error) error {
	if ferr := checkKind(fsys, path); ferr != nil {
		return ferr
	}
	return &fs.PathError{Op: "open", Path: path, Err: err}
}

// take attaches the lock's database and runs lockSQL, or takes SQLite's
// lock on pin directly (l.ranged), once or as retry says.
func (l *Lock) take(ctx context.Context, p *platform.Platform, retry Retry, pin lockfs.File) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = &panicError{value: r}
		}
		if errors.Is(err, ErrPanic) {
			l.broken = true
		}
	}()
	if retry == RetryQueue && l.ranged != nil {
		return l.queueRange(ctx, pin)
	}
	if retry == RetryQueue {
		retry = RetryBusy
	}
	if retry == RetryBusy {
		// Every wait goes through the platform's one pause, under one
		// kept watch (platform.Watching), so that a holder letting go
		// (its mark going away) ends it at once, even while SQLite was
		// trying; after such a wake-up the next wait is short, since the
		// holder drops its kernel lock a moment after it removes its
		// mark.
		var stop func()
		ctx, stop = wake.Watching(ctx, p)
		defer stop()
	}
	w := newBusyWait(ctx, p, l.path, retry)
	if retry != RetryBusy {
		return l.try(pin, w)
	}
	err = l.tryBusy(pin, w)
	for range retries {
		if !errors.Is(err, sqlapi.SQLiteBusy) {
			return err
		}
		d := retryMin + rand.N(retrySpread)
		if w.woke {
			d = afterWake
		}
		if w.pause(d) != nil {
			return err
		}
		err = l.try(pin, w)
	}
	return err
}

// busyWait is the waiting of one attempt's busy timeout and retries.
type busyWait struct {
	ctx   context.Context
	p     *platform.Platform
	retry Retry
	start time.Time
	path  string
	dir   string
	names []string
	kept  bool // the Waker keeps a watch (wake.Watcher)
	woke  bool // the last pause was ended by a wake-up
	// holder is the pid the waits watch where the Waker keeps no watch
	// (the fake world): the holder the mark names, running here, looked
	// up again after each wake-up, so that its death ends the waits as it
	// ends a waiting Acquire's between attempts, for both mechanisms alike
	// (docs/testing.md, "Time"). linux's kept watch finds the holder
	// itself; without a Waker the waits sleep on the clock.
	holder int
	looked bool
}

func newBusyWait(ctx context.Context, p *platform.Platform, path string, retry Retry) *busyWait {
	_, kept := p.Wake.(wake.Watcher)
	return &busyWait{ctx: ctx, p: p, retry: retry, start: p.Time().Now(), path: path,
		dir: filepath.Dir(path), names: lockrec.Watched(path), kept: kept}
}

// pause waits d, or until the lock's files change or its holder exits.
func (w *busyWait) pause(d time.Duration) error {
	if !w.looked && !w.kept && w.p.Wake != nil {
		w.holder, w.looked = runningHolder(w.p, w.path), true
	}
	woke, err := wake.Pause(w.ctx, w.p, w.dir, w.names, w.holder, d)
	w.woke = woke
	if woke {
		w.looked = false // gone, or changing hands: look again
	}
	return err
}

// tick is one wait of a first attempt's busy wait; false once
// BusyTimeout is out.
func (w *busyWait) tick() bool {
	if w.retry != RetryBusy || w.p.Time().Now().Sub(w.start) >= BusyTimeout {
		return false
	}
	d := time.Millisecond
	if w.woke && w.kept {
		d = afterWake
	}
	return w.pause(d) == nil
}

// try makes one try at SQLite's exclusive lock, through the byte-range
// locks or SQL; through SQL on a connection in exclusive locking mode, it
// lets go of the attach's shared lock before each of w's ticks.
func (l *Lock) try(pin lockfs.File, w *busyWait) error {
	if l.ranged != nil {
		return l.lockRange(pin)
	}
	excl := exclusiveByDefault(l.conns)
	sql := lockSQL
	if excl {
		sql = lockExclusiveSQL
	}
	for {
		if !l.attached {
			if err := exec(l.conn, attachSQL(l.name, false)); err != nil {
				return err
			}
			l.attached = true
		}
		err := exec(l.conn, sql)
		if !excl || !errors.Is(err, sqlapi.SQLiteBusy) {
			return err
		}
		// Still holding the attach's shared lock (exclusive locking
		// mode): let go of it before waiting.
		if derr := l.unattach(); derr != nil {
			return derr
		}
		if !w.tick() {
			return err
		}
	}
}

// tryBusy is try, waiting out the busy timeout: through the byte-range
// locks by ticks between tries, through SQL by SQLite's busy handler.
func (l *Lock) tryBusy(pin lockfs.File, w *busyWait) error {
	if l.ranged != nil {
		err := l.try(pin, w)
		for errors.Is(err, sqlapi.SQLiteBusy) && w.tick() {
			err = l.try(pin, w)
		}
		return err
	}
	excl := exclusiveByDefault(l.conns)
	l.conn.BusyHandler(func(context.Context, int) bool {
		if excl && l.attached && l.sharedOnly() {
			// BEGIN EXCLUSIVE found another shared lock beside ours, or
			// a writer's: no waiting on a shared lock (try).
			return false
		}
		return w.tick()
	})
	defer l.conn.BusyHandler(nil)
	return l.try(pin, w)
}

// runningHolder is the pid of the holder the mark of the lock at path
// names, when it runs on this host, boot and pid namespace for certain;
// else 0: no process to watch.
func runningHolder(p *platform.Platform, path string) int {
	r := lockrec.ReadHolder(p.FS, path)
	if r == nil || p.Process == nil {
		return 0
	}
	here, err := p.Process.Self()
	id := r.Holder()
	if err != nil || id == nil || platform.Judge(here, *id, p.Process.Lookup).Reason != platform.ReasonRunning {
		return 0
	}
	return id.PID
}
