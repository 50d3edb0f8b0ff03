package platform

import (
	"context"
	"time"

	"github.com/proclock/proclock/lockfs"
)

// Platform is everything a lock knows of the world: the mechanisms reach
// files, processes, SQLite and time only through it, so that a test can
// hand them a fake world and a wasm host its own.
type Platform struct {
	// FS is the filesystem locks live in. Required.
	FS lockfs.FS
	// SQLite is how SQLite locks database files of FS. Nil selects the
	// file mechanism.
	SQLite SQLite
	// Process gives this process's identity and facts about other pids.
	// Nil means this process's identity is unknown.
	Process Process
	// Clock tells time and sleeps. Nil means real time.
	Clock Clock
	// Wake, when set, wakes a waiting Acquire as soon as the lock's files
	// change or its holder exits. Nil: waits sleep on Clock. It keeps
	// Clock's time: a platform given another Clock needs a Wake to
	// match, or none.
	Wake Waker
}

// Time returns p's clock, or real time when it has none.
func (p *Platform) Time() Clock {
	if p.Clock == nil {
		return realClock{}
	}
	return p.Clock
}

// WithoutSQLite returns a copy of p without SQLite, whose locks use the
// file mechanism: how a program or a test chooses it where SQLite is
// there. The copy shares p's FS, so acquisitions through either take turns
// in memory as one process's do.
func (p *Platform) WithoutSQLite() *Platform {
	q := *p
	q.SQLite = nil
	return &q
}

// SQLite is how SQLite locks database files on a platform's FS, so that
// the SQLite mechanism takes the lock every connection to the file takes
// (docs/design.md, "Locking without SQL"): as byte-range locks on SQLite's
// locking bytes, without a connection, when LocksBytes says so (over an FS
// with lockfs.RangeLocker); else through connections of an optional power
// that only proclock's own packages linking SQLite's engine provide. A
// SQLite written outside proclock takes the first way. A wrapper of a
// SQLite forwards LocksBytes, as a wrapper of an FS forwards RangeLocker.
type SQLite interface {
	// LocksBytes reports whether SQLite's VFS locks database files of the
	// platform's FS with the FS's byte-range locks (lockfs.RangeLocker) at
	// SQLite's locking bytes, so that taking those locks directly excludes
	// every connection to the file, and is excluded by them.
	LocksBytes() bool
}

// Process gives this process's identity and facts about other processes of
// the same host (and pid namespace).
type Process interface {
	// Self returns this process's identity, the same answer every time.
	// It may fail (a sandbox that denies /proc or sysctl, a wasm host).
	Self() (Identity, error)
	// Lookup reports what is known of pid right now. A pid that does not
	// exist gives Exists false and a nil error; any other failure is an
	// error, never taken as proof of death.
	Lookup(pid int) (PIDInfo, error)
}

// PIDInfo is what Lookup tells of a pid.
type PIDInfo struct {
	Exists bool
	// StartTime is the process's start time, in the units of
	// Identity.StartTime; 0 when unknown.
	StartTime uint64
}

// Clock tells time and waits; a fake clock may move its time forward
// instead.
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
