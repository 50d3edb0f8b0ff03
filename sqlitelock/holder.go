package sqlitelock

import (
	"context"
	"crypto/rand"
	"errors"
	"io/fs"

	"github.com/proclock/proclock/internal/lockrec"
	"github.com/proclock/proclock/lockfs"
	"github.com/proclock/proclock/platform"
)

// HolderSuffix names the mark beside the lock: "<path>.holder", the
// holder's record. It names the holder for diagnostics, and it keeps
// processes without SQLite out (docs/protocol.md). A long base name's
// mark is shortened (lockrec.MarkPath; docs/protocol.md, "Names").
const HolderSuffix = lockrec.MarkSuffix

// HolderFileMode is the mode .holder files are created with.
const HolderFileMode = lockrec.FileMode

// Record is what a .holder file says: the holder's identity and when it
// took the lock.
type Record = lockrec.Record

// markTries bounds how often an attempt removes a dead mark and tries
// again to create its own.
const markTries = 3

// mark creates this holder's mark with O_EXCL, never replacing another;
// it names the pinned file. A mark already there is removed, under the
// guard, after checking again that it is the same mark and that the path
// still names the pinned file, and only when it is not a holder's
// (docs/protocol.md): it names the pinned file, whose kernel lock this
// process now holds, so its writer has let go of it (a holder removes its
// mark before it lets go); or its writer is gone for certain. Any other
// mark may be a holder's that is releasing, or a process's that is backing
// off: the lock is held by its writer (a Busy error), for now.
func (l *Lock) mark(p *platform.Platform, a Attempt) error {
	rec := lockrec.Record{Format: lockrec.Format, AcquiredAt: p.Time().Now(), Nonce: rand.Text(), LockDev: l.id.Dev, LockIno: l.id.Ino}
	if a.Self != nil {
		rec.Identity = *a.Self
	}
	for range markTries {
		err := lockrec.CreateMark(p.FS, l.path, rec)
		if err == nil {
			l.nonce = rec.Nonce
			return nil
		}
		if !errors.Is(err, fs.ErrExist) {
			return err
		}
		m := lockrec.ReadMark(p.FS, l.path)
		leftover := m.Names(l.id)
		if !leftover && (a.Self == nil || !m.Dead(p, a.Self)) {
			return &Busy{Path: l.path, Record: m.Record}
		}
		if err := l.clearMark(p, a, m); err != nil {
			return err
		}
	}
	return &Busy{Path: l.path, Record: ReadHolder(p.FS, l.path)}
}

// clearMark removes mark m, seen at the lock's mark, under the guard. A
// process without an identity takes no guard (a guard is a stamp): it
// clears only marks that name its pinned file, which no other process can
// clear while it holds that file's kernel lock.
func (l *Lock) clearMark(p *platform.Platform, a Attempt, m lockrec.Mark) error {
	if a.Guard != nil {
		release, err := a.Guard(a.context(), l.path)
		if err != nil {
			return err
		}
		defer release()
	}
	if now, err := p.FS.FileID(l.path); err != nil || !now.SameOpen(l.id) {
		return errSwapped
	}
	return lockrec.RemoveMarkIf(p.FS, l.path, m.Raw)
}

// unmark removes this attempt's own mark, if it is still there. A holder's
// is (docs/protocol.md); an attempt backing off reads it first, since a
// process that took the lock since may have replaced it.
func (l *Lock) unmark() error {
	if l.nonce == "" {
		return nil
	}
	if !l.held {
		m := lockrec.ReadMark(l.fsys, l.path)
		if m.Record == nil || m.Record.Nonce != l.nonce {
			l.nonce = ""
			return nil
		}
	}
	l.nonce = ""
	return removeIfThere(l.fsys, lockrec.MarkPath(l.path))
}

// ReadHolder returns what the .holder file of the lock at path says, or
// nil when it is missing, unreadable, or names no holder.
func ReadHolder(fsys lockfs.FS, path string) *Record {
	m := lockrec.ReadMark(fsys, path)
	if !m.Record.Known() {
		return nil
	}
	return m.Record
}

// liveHolder is what the mark of a busy lock says of its holder, unless its
// writer is dead for certain: the kernel's lock is then another process's
// that has not written its mark yet, and the holder is unknown.
func liveHolder(p *platform.Platform, self *platform.Identity, path string) *Record {
	m := lockrec.ReadMark(p.FS, path)
	if !m.Record.Known() || m.Dead(p, self) {
		return nil
	}
	return m.Record
}

// ParseHolder parses a .holder file's bytes, ours or another tool's; nil
// when they name no holder.
func ParseHolder(data []byte) *Record {
	r, err := lockrec.Parse(data)
	if err != nil || !r.Known() {
		return nil
	}
	return &r
}

func (a Attempt) context() context.Context {
	if a.Ctx == nil {
		return context.Background()
	}
	return a.Ctx
}
