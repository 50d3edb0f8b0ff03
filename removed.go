package proclock

import (
	"errors"
	"io/fs"

	"github.com/proclock/proclock/internal/lockrec"
	"github.com/proclock/proclock/platform"
)

// reasonFileGone is the reason of a lock held by its mark alone, beside no
// lock file or another one than its holder locked (Status.Reason): one
// wording for both, so that run -n and status agree.
const reasonFileGone = "lock file removed or replaced while held; its holder's mark keeps it held"

// heldByMark reports the lock at path as held when nobody holds its file
// (state is absent or free) but a live SQLite holder's mark keeps others
// out, naming another file or one that is gone: every Acquire says held
// then (docs/protocol.md, "A held lock's files removed"), and so must
// IsHeld and Inspect.
func heldByMark(p *platform.Platform, path string, state State) (st Status, ok bool) {
	if state != StateAbsent && state != StateFree {
		return Status{}, false
	}
	m := lockrec.ReadMark(p.FS, path)
	if !m.Present || m.Foreign() || !m.Live(p, selfIdentity(p)) {
		return Status{}, false
	}
	if m.Record == nil {
		// Empty or cut, within its 30 s: Acquire waits it out.
		return Status{Path: path, State: StateHeld, Mechanism: MechanismSQLite}, true
	}
	if state == StateFree {
		id, err := p.FS.FileID(path)
		switch {
		case errors.Is(err, fs.ErrNotExist):
		case err != nil || m.Names(id) || m.Record.LockIno == 0:
			// A leftover naming the free file, which Acquire removes.
			return Status{}, false
		}
	}
	st = Status{Path: path, State: StateHeld, Reason: reasonFileGone, Mechanism: MechanismSQLite, Holder: m.Holder()}
	st.setAcquired(m.Record.AcquiredAt, p.Time().Now())
	return st, true
}
