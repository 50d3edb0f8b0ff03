package platform

import (
	"context"
	"time"

	"github.com/proclock/proclock/lockfs"
)

// Platform is everything a lock knows of the world. The mechanisms reach
// files, processes, SQLite and time only through it, so a test can hand
// them a fake world and a wasm host its own.
type Platform struct {
	// FS is the filesystem locks live in. Required.
	FS lockfs.FS
	// SQLite is how SQLite locks database files of FS: taken without a
	// connection, or through connections (SQLite's doc says which). Nil
	// selects the file mechanism.
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
		return realClock{}
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

// SQLite is how SQLite locks database files on a platform's FS: what the
// SQLite mechanism needs to take the lock SQLite's connections take, so
// that every connection to the file excludes it and is excluded by it. It
// is taken one of two ways (docs/design.md, "Locking without SQL"):
//
//   - as byte-range locks the mechanism takes itself on SQLite's locking
//     bytes, without a connection, when LocksBytes says SQLite locks the
//     FS's files with the FS's own byte-range locks (lockfs.RangeLocker);
//   - else through SQL, on connections of an optional power (Connect),
//     which only proclock's own packages that link SQLite's engine
//     provide (go-sqlite3: darwin, windows and the BSDs natively; package
//     fake/fakesql).
//
// So a program whose SQLite locks bytes (linux) compiles no SQL engine,
// and a SQLite written outside proclock takes the first way: LocksBytes
// true, over an FS with lockfs.RangeLocker. A wrapper of a SQLite
// forwards LocksBytes, as a wrapper of an FS forwards RangeLocker: one
// that hides both ways has no way to lock, and the SQLite mechanism says
// so (sqlitelock.ErrNoConnections).
type SQLite interface {
	// LocksBytes reports whether SQLite's VFS locks database files of the
	// platform's FS with the FS's byte-range locks (lockfs.RangeLocker), at
	// the bytes SQLite's file format sets aside for locking, so that taking
	// those locks directly excludes every connection to the file, of this
	// process or another, and is excluded by them. Only a SQLite whose
	// VFS opens the same files as the FS, and locks them so, may say so.
	LocksBytes() bool
}

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

// realClock is the system's clock.
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
