package conformance

import (
	"context"
	"testing"
	"time"

	"github.com/proclock/proclock"
	"github.com/proclock/proclock/lockfs"
	"github.com/proclock/proclock/platform"
)

// Harness is what Run needs of a platform: a way to make, for each case, a
// world of processes that take locks.
type Harness interface {
	// Mechanism is the mechanism the harness's peers lock with.
	Mechanism() proclock.Mechanism
	// New makes a world for one case; t's cleanup ends it.
	New(t *testing.T) World
}

// World is one case's world: a directory to put locks in, a view of the
// filesystem to stage and inspect files, and processes.
//
// Cases stage what no lock does through methods a World may also have, as
// package os's: Mkdir(name string, perm fs.FileMode) error, for every
// world, and Chtimes(name string, atime, mtime time.Time) error, for a
// world on real time (whose Advance reports false), to make a file look
// old. They list Dir through Readdirnames(n int) ([]string, error) on
// the directory opened with FS().OpenFile, as *os.File has it. A case
// that needs one of these and does not find it fails, naming it.
type World interface {
	// Dir is a directory, empty at first, for the case's locks.
	Dir() string
	// FS is a view of the filesystem that belongs to no peer, for
	// staging files and checking what peers wrote.
	FS() lockfs.FS
	// Now is the world's time, as peers see it.
	Now() time.Time
	// Spawn starts a process of this host that can take locks.
	Spawn(t *testing.T) Peer
	// Advance moves the world's time forward by d, and reports whether
	// it could: a world on real time cannot, and cases that need exact
	// time are skipped there.
	Advance(d time.Duration) bool
}

// Peer is a process that takes locks on command. A peer holds any number
// of locks, by path.
type Peer interface {
	// Identity is the peer's identity, as it would stamp it.
	Identity() platform.Identity
	// Acquire runs proclock.Acquire in the peer and keeps the lock.
	// A held lock gives a *proclock.HeldError.
	Acquire(ctx context.Context, path string, opts proclock.Options) error
	// Release releases the peer's lock at path.
	Release(path string) error
	// IsHeld and Inspect run proclock's in the peer.
	IsHeld(ctx context.Context, path string) (bool, error)
	Inspect(ctx context.Context, path string) (proclock.Status, error)
	// Kill ends the peer at once, as SIGKILL does: it releases nothing.
	Kill()
	// FailIdentity makes the peer unable to read its own identity, as
	// in a sandbox that denies /proc. It reports whether the harness can
	// stage that.
	FailIdentity() bool
}
