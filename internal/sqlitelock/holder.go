package sqlitelock

import (
	"context"
	"crypto/rand"
	"errors"
	"io/fs"

	"github.com/proclock/proclock/internal/lockrec"
	"github.com/proclock/proclock/platform"
)

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
// off: the lock is held by its writer (a *lockrec.HeldError), for now.
// The lock's mark is "<path>.holder" (lockrec.MarkPath): it names the
// holder for diagnostics, and it keeps processes without SQLite out
// (docs/protocol.md).
func (l *Lock) mark(ctx context.Context, p *platform.Platform, a Attempt) error {
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
		if m.Err != nil {
			return m.Err // out of descriptors: nothing known of it
		}
		if m.Foreign() {
			// A user's file at the mark's name: never removed, and no
			// mark can be left beside it (docs/protocol.md).
			return &fs.PathError{Op: "lock", Path: lockrec.MarkPath(l.path), Err: lockrec.ErrNotLockFile}
		}
		leftover := m.Names(l.id)
		if !leftover && (a.Self == nil || !m.Dead(p, a.Self)) {
			return &lockrec.HeldError{Path: l.path, Holder: m.Holder()}
		}
		if err := l.clearMark(ctx, p, a, m); err != nil {
			return err
		}
	}
	return &lockrec.HeldError{Path: l.path, Holder: lockrec.ReadHolder(p.FS, l.path).Holder()}
}

// clearMark removes mark m, seen at the lock's mark, under the guard. A
// process without an identity takes no guard (a guard is a stamp): it
// clears only marks that name its pinned file, which no other process can
// clear while it holds that file's kernel lock.
func (l *Lock) clearMark(ctx context.Context, p *platform.Platform, a Attempt, m lockrec.Mark) error {
	if a.Guard != nil {
		release, err := a.Guard(ctx, l.path)
		if err != nil {
			return err
		}
		defer release()
	}
	if now, err := p.FS.FileID(l.path); err != nil || !now.SameOpen(l.id) {
		return errSwapped
	}
	if err := lockrec.RemoveMarkIf(p.FS, l.path, m.Raw); err != nil {
		return err
	}
	// A dead or left-over mark: a crash, whose leftovers go too.
	lockrec.Sweep(p, a.Self, l.path)
	return nil
}

// unmark removes this attempt's own mark, if it is still there. A holder's
// is (docs/protocol.md); an attempt backing off reads it first, since a
// process that took the lock since may have replaced it, and so does a
// holder that Check saw lose its mark (removed by a user, and perhaps
// another holder's now).
func (l *Lock) unmark() error {
	if l.nonce == "" {
		return nil
	}
	if !l.held || l.markLost {
		m := lockrec.ReadMark(l.fsys, l.at)
		if m.Record == nil || m.Record.Nonce != l.nonce {
			l.nonce = ""
			return nil
		}
	}
	l.nonce = ""
	return l.removeName(lockrec.MarkPath(l.path))
}

// liveHolder is what the mark of a busy lock says of its holder, unless its
// writer is dead for certain: the kernel's lock is then another process's
// that has not written its mark yet, and the holder is unknown.
func liveHolder(p *platform.Platform, self *platform.Identity, path string) *lockrec.Record {
	m := lockrec.ReadMark(p.FS, path)
	if !m.Record.Known() || m.Dead(p, self) {
		return nil
	}
	return m.Record
}
