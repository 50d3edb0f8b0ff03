package proclock

import (
	"errors"
	"fmt"

	"github.com/proclock/proclock/internal/lockrec"
	"github.com/proclock/proclock/platform"
)

// ErrHeld is matched (errors.Is) by every error that says a lock is held by
// someone else: a *HeldError, and the error of a wait that gave up.
var ErrHeld = errors.New("proclock: lock is held")

// HeldError is the error Acquire returns when someone else holds the lock.
type HeldError struct {
	// Path is the lock's path, as the caller gave it.
	Path string
	// Holder is the holder's recorded identity; nil when unknown.
	Holder *platform.Identity
}

func (e *HeldError) Error() string {
	if e.Holder == nil {
		return fmt.Sprintf("proclock: %s is held (holder unknown)", e.Path)
	}
	return fmt.Sprintf("proclock: %s is held by %s", e.Path, e.Holder)
}

// Is makes errors.Is(err, ErrHeld) hold for every HeldError.
func (e *HeldError) Is(target error) bool { return target == ErrHeld }

// ErrNetworkFS is matched by Acquire's error for a lock on a network
// filesystem (NFS, SMB/CIFS), where neither SQLite's locks nor lock files
// can be trusted. Options.AllowNetworkFS opts in.
var ErrNetworkFS = errors.New("proclock: lock directory is on a network filesystem")

// ErrNotLockFile is matched by Acquire's (and IsHeld's) error when the file
// at the lock's path is not recognisably a lock file: a script, text, a
// database with tables, JSON without a pid, a FIFO, socket or device, a
// file over 64 KiB. proclock never removes or changes such a file
// (docs/protocol.md says what is a lock file).
var ErrNotLockFile = lockrec.ErrNotLockFile
