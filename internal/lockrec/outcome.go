package lockrec

import (
	"errors"
	"fmt"
	"io/fs"
	"time"

	"github.com/proclock/proclock/lockfs"
	"github.com/proclock/proclock/platform"
)

// State is what a look at a lock's path finds, as proclock.State says it.
type State string

const (
	StateAbsent State = "absent" // nothing at the path
	StateFree   State = "free"   // a lock file nobody holds
	StateHeld   State = "held"   // held, or a young unstamped file that may be
	StateStale  State = "stale"  // a lock file whose holder is gone
)

func (s State) String() string { return string(s) }

// ErrHeld is matched (errors.Is) by every error that says a lock is held by
// someone else: a *HeldError, and the error of a wait that gave up.
var ErrHeld = errors.New("proclock: lock is held")

// HeldError is the error of an attempt that found the lock held by
// someone else; the root package makes it a proclock.HeldError.
type HeldError struct {
	Path   string             // as the caller gave it
	Holder *platform.Identity // nil when unknown
	Reason string             // when Holder is nil, what is known (FlockReason)
	Since  time.Time          // when Holder took the lock, from the record that names it
}

func (e *HeldError) Error() string {
	switch {
	case e.Holder != nil:
		return fmt.Sprintf("proclock: %s is held by %s", e.Path, e.Holder)
	case e.Reason != "":
		return fmt.Sprintf("proclock: %s is held (holder unknown: %s)", e.Path, e.Reason)
	}
	return fmt.Sprintf("proclock: %s is held (holder unknown)", e.Path)
}

// Is makes errors.Is(err, ErrHeld) hold for every HeldError.
func (e *HeldError) Is(target error) bool { return target == ErrHeld }

// HeldBy is the held error of the lock at path whose holder r names (nil:
// unknown).
func HeldBy(path string, r *Record) *HeldError {
	e := &HeldError{Path: path, Holder: r.Holder()}
	if e.Holder != nil {
		e.Since = r.AcquiredAt
	}
	return e
}

// ErrRemoved is matched by the cause of a held lock's loss when one of its
// files is no longer at its path.
var ErrRemoved = errors.New("removed from its path")

// ErrReplaced is matched by the cause of a held lock's loss when another
// file is at one of its files' path, or its bytes are not its holder's.
var ErrReplaced = errors.New("replaced at its path")

// Gone is the cause of the loss of name, err what a look at it failed with:
// ErrRemoved, ErrReplaced, or nil (a look failing with EACCES proves nothing).
func Gone(name string, err error, replaced bool) error {
	switch {
	case errors.Is(err, fs.ErrNotExist) || errors.Is(err, lockfs.ErrNotDir):
		if pe, ok := errors.AsType[*fs.PathError](err); ok {
			err = pe.Err // the name is said once
		}
		return &fs.PathError{Op: "watch", Path: name, Err: fmt.Errorf("%w (%w)", ErrRemoved, err)}
	case err == nil && replaced:
		return &fs.PathError{Op: "watch", Path: name, Err: ErrReplaced}
	}
	return nil
}
