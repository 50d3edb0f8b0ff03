package proclock

import (
	"errors"
	"io/fs"

	"github.com/proclock/proclock/internal/lockrec"
	"github.com/proclock/proclock/platform"
)

// reasonFileGone is the reason of a lock held by its mark alone, beside no
// lock file or another one than its holder locked (Status.Reason). One
// wording for both: a run -n held off by the mark leaves a new file where
// there was none, and must say what status said before it.
const reasonFileGone = "lock file removed or replaced while held; its holder's mark keeps it held"

// heldByMark reports the lock at path as held when nobody holds its file
// (state is absent or free) but a SQLite holder's mark keeps others out: a
// live writer's mark naming another file than the one at path, or naming
// a file when there is none. That is a held lock whose file was removed
// (or replaced) under it: every Acquire, of either mechanism, finds the
// mark and says held (docs/protocol.md, "A held lock's files removed"),
// and so must IsHeld and Inspect. ok is false when the mark keeps nobody
// out.
func heldByMark(p *platform.Platform, path string, state State) (st Status, ok bool) {
	if state != StateAbsent && state != StateFree {
		return Status{}, false
	}
	m := lockrec.ReadMark(p.FS, path)
	if !m.Present || m.Foreign() || !m.Live(p, selfIdentity(p)) {
		// No mark, or a user's file.
		return Status{}, false
	}
	if m.Record == nil {
		// Empty or cut, within its 30 s (another tool's, or a writer's
		// on a filesystem without links): Acquire waits it out.
		return Status{Path: path, State: StateHeld, Mechanism: MechanismSQLite}, true
	}
	if state == StateFree {
		id, err := p.FS.FileID(path)
		switch {
		case errors.Is(err, fs.ErrNotExist):
		case err != nil || m.Names(id) || m.Record.LockIno == 0:
			// Its writer let go of the file it names, which is free:
			// a leftover, which Acquire removes. (A mark naming no
			// file is not judged so.)
			return Status{}, false
		}
	}
	st = Status{Path: path, State: StateHeld, Reason: reasonFileGone, Mechanism: MechanismSQLite, Holder: m.Holder()}
	st.setAcquired(m.Record.AcquiredAt, p.Time().Now())
	return st, true
}
