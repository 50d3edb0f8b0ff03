package platform

import (
	"context"
	"errors"
	"time"

	"github.com/ncruces/go-sqlite3"

	"github.com/proclock/proclock/lockfs"
)

// Platform is everything a lock knows of the world. The mechanisms reach
// files, processes, SQLite and time only through it, so a test can hand
// them a fake world and a wasm host its own.
type Platform struct {
	// FS is the filesystem locks live in. Required.
	FS lockfs.FS
	// SQLite opens SQLite databases on FS. Nil selects the file mechanism.
	SQLite SQLite
	// Process gives this process's identity and facts about other pids.
	// Nil means this process's identity is unknown.
	Process Process
	// Clock tells time and sleeps. Nil means real time.
	Clock Clock
	// Wake, when set, wakes a waiting Acquire as soon as the lock's files
	// change or its holder exits, instead of after its back-off. Nil:
	// waits sleep on Clock. It keeps Clock's time (Native's, real time;
	// a fake process's, its world's): a platform given another Clock
	// needs a Wake to match, or none.
	Wake Waker
}

// Time returns p's clock, or real time when it has none.
func (p *Platform) Time() Clock {
	if p.Clock == nil {
		return RealClock()
	}
	return p.Clock
}

// WithoutSQLite returns a copy of p without SQLite: locks taken, probed and
// inspected through it use the file mechanism, as on a platform that has no
// SQLite (wasip1, js). It is how a program or a test chooses the file
// mechanism where SQLite is there; p is left as it is. The copy shares p's
// FS, so acquisitions through either take turns in memory as one process's
// do.
func (p *Platform) WithoutSQLite() *Platform {
	q := *p
	q.SQLite = nil
	return &q
}

// SQLite opens connections to SQLite databases on a platform's FS, through
// the VFS that knows how to lock them.
type SQLite interface {
	// Open opens a connection to the database file at path (a file
	// name, not a URI) with the given flags. The implementation chooses
	// the VFS: the OS's, or a fake world's.
	Open(path string, flags sqlite3.OpenFlag) (*sqlite3.Conn, error)
}

// SQLiteNamer is an optional power of a SQLite: naming a database file for
// SQLite, whose pathname limit (MaxSQLitePath) is shorter than the
// system's. Without it, a path over the limit is refused.
type SQLiteNamer interface {
	// SQLiteName returns the name by which SQLite is to open the file at
	// path, and done, to call once SQLite has opened it or failed to (the
	// name may not outlive it). A path within the limit is its own name.
	// A path SQLite cannot be given a name for fails with an error
	// matching ErrSQLitePathTooLong.
	SQLiteName(path string) (name string, done func(), err error)
}

// MaxSQLitePath is the longest absolute path SQLite opens a database by:
// its VFS's limit (1024 bytes) less the 8 of "-journal", the longest name
// SQLite makes of a database's.
const MaxSQLitePath = 1024 - len("-journal")

// ErrSQLitePathTooLong is matched by SQLiteName's error for a path longer
// than MaxSQLitePath that cannot be named shorter on this system.
var ErrSQLitePathTooLong = errors.New("path too long for SQLite")

// Process gives this process's identity and facts about other processes of
// the same host (and pid namespace).
type Process interface {
	// Self returns this process's identity. It may fail: a sandbox that
	// denies /proc or sysctl, a wasm host. Implementations read it once
	// and return the same answer every time.
	Self() (Identity, error)
	// Lookup reports what is known of pid right now. A pid that does not
	// exist gives Exists false and a nil error; any other failure to
	// read is an error, never taken as proof of death.
	Lookup(pid int) (PIDInfo, error)
}

// PIDInfo is what Lookup tells of a pid.
type PIDInfo struct {
	Exists bool
	// StartTime is the process's start time, in the units of
	// Identity.StartTime; 0 when unknown (for example, the process exists
	// but belongs to another user and the system hides it).
	StartTime uint64
}

// Clock tells time and waits. A fake clock may move its time forward
// instead of waiting.
type Clock interface {
	Now() time.Time
	// Sleep waits for d or until ctx is done, whichever comes first, and
	// returns ctx.Err() in the second case.
	Sleep(ctx context.Context, d time.Duration) error
}

// RealClock returns the system's clock.
func RealClock() Clock { return realClock{} }

type realClock struct{}

func (realClock) Now() time.Time { return time.Now() }

func (realClock) Sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// SQLiteByteLocks is an optional power of a SQLite: its VFS locks a
// database file with the byte-range locks of the platform's FS
// (lockfs.RangeLocker), at the bytes SQLite's file format sets aside for
// locking. Taking those locks directly then excludes every connection to
// the file, of this process or another, and is excluded by them, so the
// SQLite mechanism takes and looks for its lock without a connection
// (docs/design.md, "Locking without SQL"). Only a SQLite whose VFS opens
// the same files as the FS, and locks them so, may have it.
type SQLiteByteLocks interface {
	SQLite
	// LocksBytes does nothing: having it says the above.
	LocksBytes()
}
