package proclock

import (
	"errors"
	"io/fs"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/proclock/proclock/internal/lockrec"
	"github.com/proclock/proclock/internal/sqlitelock"
	"github.com/proclock/proclock/lockfs"
	"github.com/proclock/proclock/platform"
)

// ErrHeld is matched (errors.Is) by every error that says a lock is held by
// someone else: a *HeldError, and the error of a wait that gave up.
var ErrHeld = lockrec.ErrHeld

// HeldError is the error Acquire returns when someone else holds the lock.
// errors.Is(err, ErrHeld) holds for every HeldError.
type HeldError struct {
	Path   string             // as the caller gave it
	Holder *platform.Identity // as recorded; nil when unknown
	// Reason says, when Holder is nil, what is known of the holder
	// ("a flock(2) lock").
	Reason string
	Since  time.Time // when the holder took the lock; zero when unknown
}

func (e *HeldError) Error() string {
	return (&lockrec.HeldError{Path: e.Path, Holder: e.Holder, Reason: e.Reason}).Error()
}

// Is makes errors.Is(err, ErrHeld) hold for every HeldError.
func (e *HeldError) Is(target error) bool { return target == ErrHeld }

// ErrLost is matched (errors.Is) by the error a Lock reports (Lock.Err)
// once it has learnt that it lost its lock without letting go: a host
// lock's file or mark removed or replaced, its filesystem gone; a cluster
// lock's lease expired or revoked, its key deleted. The error is a
// *LostError.
var ErrLost = errors.New("lock lost")

// LostError says that a held lock was lost, and why.
type LostError struct {
	Path string // as the caller gave it (for a cluster lock, its name)
	Err  error  // the cause
}

func (e *LostError) Error() string {
	if e.Err == nil {
		return "proclock: " + e.Path + ": lock lost"
	}
	return "proclock: " + e.Path + ": lock lost: " + e.Err.Error()
}

// Is makes errors.Is(err, ErrLost) hold for every LostError.
func (e *LostError) Is(target error) bool { return target == ErrLost }

func (e *LostError) Unwrap() error { return e.Err }

// ErrNetworkFS is matched by Acquire's error for a lock on a network
// filesystem (NFS, SMB/CIFS), where neither SQLite's locks nor lock files
// can be trusted. Options.AllowNetworkFS opts in.
var ErrNetworkFS = errors.New("proclock: lock directory is on a network filesystem")

// ErrNotLockFile is matched by Acquire's (and IsHeld's) error when the file
// at the lock's path is not recognisably a lock file (a script, a database
// with tables, a FIFO, a file over 64 KiB: docs/protocol.md). proclock
// never removes or changes such a file.
var ErrNotLockFile = lockrec.ErrNotLockFile

// ErrPathTooLong is matched by the error for a lock path refused as too
// long before anything is created: a base name over NAME_MAX, less than
// 64 bytes to spare under PATH_MAX for its sidecars (docs/protocol.md,
// "Names"), or over SQLite's 1016 bytes where SQLite cannot be given a
// shorter name. It matches lockfs.ErrNameTooLong (ENAMETOOLONG) too.
var ErrPathTooLong = lockrec.ErrPathTooLong

// ErrSidecarName is matched by the error for a lock path named as a file
// proclock keeps beside another lock (x.lock.holder, x.lock.stale:
// docs/protocol.md, "Names").
var ErrSidecarName = errors.New("the name of a file proclock keeps beside a lock")

// Error is the error Acquire, IsHeld and Inspect return when they cannot
// take or read the lock at a path for another reason than its being held,
// and Release's when it cannot let go of it cleanly. Its message is one
// line: what failed, on which path, and the cause in plain words. Unwrap
// gives the cause in full, for errors.Is and errors.As.
type Error struct {
	Op   string // "acquire", "inspect" or "release"
	Path string // as the caller gave it
	Err  error  // the cause
}

func (e *Error) Error() string {
	return "proclock: " + e.Op + " " + e.Path + ": " + plainCause(e.Err, e.Path)
}

func (e *Error) Unwrap() error { return e.Err }

// pathError wraps err, the cause of a failure of op on the lock at path,
// in an *Error; an *Error and held errors pass as they are.
func pathError(op, path string, err error) error {
	if _, ok := errors.AsType[*Error](err); ok || err == nil || errors.Is(err, ErrHeld) {
		return err
	}
	return &Error{Op: op, Path: path, Err: err}
}

// plainCause words err, the cause of a failure on the lock at path, for
// people: no path but a sidecar's base name, no SQLite internals.
func plainCause(err error, path string) string {
	switch {
	case errors.Is(err, ErrNetworkFS), errors.Is(err, errNoIdentity):
		return err.Error() // in plain words already
	case errors.Is(err, fs.ErrInvalid):
		return "empty path"
	case errors.Is(err, sqlitelock.ErrReadOnly):
		return "permission denied: this user can read the lock file but not write it; " +
			"a lock shared by a group needs it group-writable (chmod g+w, and umask 002 for its users; docs/security.md)"
	case errors.Is(err, fs.ErrPermission):
		if side := sidecarOf(err, path); side != "" {
			return "permission denied on " + side + ", beside the lock: its directory must let this user create and remove files " +
				"(for a group: group-writable, setgid, not sticky; docs/security.md)"
		}
		return "permission denied"
	case errors.Is(err, ErrPathTooLong), errors.Is(err, lockfs.ErrNameTooLong):
		why := ""
		if tl, ok := errors.AsType[*lockrec.TooLongError](err); ok {
			why = ": " + tl.Why
		}
		return "name too long" + why + sidecarNamed(err, path)
	case errors.Is(err, ErrNotLockFile):
		// One wording for every kind, so that both mechanisms, and
		// status and run, say the same of one path.
		if side := sidecarNamed(err, path); side != "" {
			return "not a lock file" + side + ": proclock never changes it; lock another path"
		}
		return "not a lock file: proclock never changes it; lock another path"
	case errors.Is(err, ErrSidecarName):
		return "a name proclock keeps for a file beside another lock (docs/protocol.md, \"Names\"): lock another path"
	case errors.Is(err, lockfs.ErrIsDir):
		return "is a directory" + sidecarNamed(err, path)
	case errors.Is(err, lockfs.ErrNotDir):
		return "a part of the path is not a directory"
	case errors.Is(err, fs.ErrNotExist):
		return "no such directory"
	case errors.Is(err, sqlitelock.ErrPanic):
		return "SQLite failed (an internal error; please report it)"
	}
	return detail(err)
}

// sidecarNamed names the sidecar that failed, when it is not the lock's
// own file: " (on x.lock.holder)".
func sidecarNamed(err error, path string) string {
	if side := sidecarOf(err, path); side != "" {
		return " (on " + side + ")"
	}
	return ""
}

// sidecarOf is the base name of the sidecar that failed, or "" when it is
// the lock's own file that did.
func sidecarOf(err error, path string) string {
	pe, ok := errors.AsType[*fs.PathError](err)
	if !ok || pe.Path == path || pe.Path == "" || filepath.Dir(pe.Path) != filepath.Dir(path) {
		return ""
	}
	return filepath.Base(pe.Path)
}

// sqliteWorded is an error with SQLite's words for its result code
// (internal/sqlconn's).
type sqliteWorded interface {
	error
	SQLiteWords() string
}

// detail is the plainest words in err for an unforeseen cause: the
// system's, else SQLite's, else the innermost message.
func detail(err error) string {
	if errno, ok := errors.AsType[syscall.Errno](err); ok {
		return errno.Error()
	}
	if e, ok := errors.AsType[sqliteWorded](err); ok {
		return e.SQLiteWords()
	}
	for {
		pe, ok := errors.AsType[*fs.PathError](err)
		if !ok {
			return strings.TrimPrefix(err.Error(), "sqlite3: ")
		}
		err = pe.Err
	}
}
