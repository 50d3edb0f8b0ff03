package platform

import (
	"context"
	"fmt"
	"time"
)

// Waker is an optional power of a platform: it wakes a waiting Acquire as
// soon as the lock it waits for may have been let go, instead of after its
// back-off. Platform.Wake holds one; nil means waits sleep on the clock.
type Waker interface {
	// Wait returns when one of names (base names of entries of the
	// directory dir) is removed or renamed away; when process pid, of
	// this host and pid namespace, exits (pid <= 0: no process is
	// watched, though linux then watches the holder of a flock(2) write
	// lock on names[0] for a wait of 2 ms or more; a pid that is already
	// gone returns at once); with pid <= 0 (the fake world: with any),
	// when the file at names[0], write-locked by a byte-range lock
	// (SQLite's, a SQLite holder's kernel lock) as the wait began, is no
	// longer, reported as WakeChange: its holder let go or died, and the
	// caller's next try takes the lock; or when d has passed on the
	// platform's clock. It says which with its Wakeup. It
	// returns ctx.Err() when ctx ends first; any other error (a fake
	// process that was killed) ends the wait as ctx's would.
	//
	// A name going away is a holder letting go (or a reclaim ending).
	// Nothing else wakes it: a name created or renamed onto is someone
	// taking the lock, of no use to a waiter, and would wake every waiter
	// at once; and a waiter opens, reads and closes the lock's files on
	// every attempt, so waiters that woke on that would wake each other
	// for ever.
	//
	// Wait may wake for nothing (the caller just attempts again) and may
	// miss an event, which then costs no more than d. No goroutine it
	// starts and nothing it opens outlives it. A Waker that cannot watch
	// (out of descriptors, a directory it cannot read) waits out d.
	Wait(ctx context.Context, dir string, names []string, pid int, d time.Duration) (Wakeup, error)
}

// Wakeup says why a Waker's Wait returned.
type Wakeup int

const (
	// WakeTimeout: d passed, and nothing watched was seen to change.
	WakeTimeout Wakeup = iota
	// WakeChange: a watched name went away (or the directory itself did,
	// or events were lost: worth a look either way).
	WakeChange
	// WakeExit: the watched process exited, or was gone already.
	WakeExit
)

// String returns the wake-up as a word: "timeout", "change" or "exit".
func (w Wakeup) String() string {
	switch w {
	case WakeTimeout:
		return "timeout"
	case WakeChange:
		return "change"
	case WakeExit:
		return "exit"
	}
	return fmt.Sprintf("Wakeup(%d)", int(w))
}

// keptWatch is internal/wake's Watch, which a Waker's Watch returns: an
// alias of the one interface, so that platform, which internal/wake
// imports, implements it without naming it.
type keptWatch = interface {
	Wait(ctx context.Context, pid int, d time.Duration) (Wakeup, error)
	Close()
}
