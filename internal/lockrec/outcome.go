package lockrec

import (
	"errors"
	"fmt"

	"github.com/proclock/proclock/platform"
)

// State is what a look at a lock's path finds. Both mechanisms' probes
// answer in it, and the root package reports it as proclock.State, whose
// constants have the same values, with "inaccessible" and "foreign" beside
// them for what is no lock.
type State string

const (
	// StateAbsent: nothing at the path; the lock is free.
	StateAbsent State = "absent"
	// StateFree: the lock's file exists and nobody holds it.
	StateFree State = "free"
	// StateHeld: a holder has it (or, for a young unstamped lock file,
	// may have it).
	StateHeld State = "held"
	// StateStale: a lock file whose holder is gone; the next attempt
	// reclaims it. The probe's reason says why.
	StateStale State = "stale"
)

func (s State) String() string { return string(s) }

// ErrHeld is matched (errors.Is) by every error that says a lock is held by
// someone else: a *HeldError, and the error of a wait that gave up.
var ErrHeld = errors.New("proclock: lock is held")

// HeldError is the error of an attempt, by either mechanism, that found
// the lock held by someone else. The root package makes it a
// proclock.HeldError, with since when.
type HeldError struct {
	// Path is the lock's path, as the caller gave it.
	Path string
	// Holder is the holder's recorded identity; nil when unknown.
	Holder *platform.Identity
	// Reason says, when Holder is nil, what is known of the holder:
	// "a flock(2) lock" (flock(1)'s, or another program's flock(2)
	// lock on the file); "" when nothing is.
	Reason string
}

func (e *HeldError) Error() string {
	if e.Holder == nil && e.Reason != "" {
		return fmt.Sprintf("proclock: %s is held (holder unknown: %s)", e.Path, e.Reason)
	}
	if e.Holder == nil {
		return fmt.Sprintf("proclock: %s is held (holder unknown)", e.Path)
	}
	return fmt.Sprintf("proclock: %s is held by %s", e.Path, e.Holder)
}

// Is makes errors.Is(err, ErrHeld) hold for every HeldError.
func (e *HeldError) Is(target error) bool { return target == ErrHeld }
