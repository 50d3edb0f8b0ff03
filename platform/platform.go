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

// SQLite is how SQLite locks database files on a platform's FS: taken as
// byte-range locks without a connection when LocksBytes says so, else
// through connections that only proclock's own packages provide
// (docs/design.md, "Locking without SQL"). A wrapper forwards LocksBytes.
type SQLite interface {
	// LocksBytes reports whether SQLite's VFS locks database files with
	// the FS's byte-range locks (lockfs.RangeLocker) at its locking bytes,
	// so that taking them excludes every connection to the file.
	LocksBytes() bool
}

// Process gives this process's identity and facts about other processes.
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
