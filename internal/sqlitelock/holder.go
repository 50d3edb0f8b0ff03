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

// mark creates this holder's mark with O_EXCL, naming the pinned file. A
// mark already there is removed only when no holder's: it names the
// pinned file, whose kernel lock this process holds, or its writer is
// dead for certain. Any other is held by its writer, for now
// (docs/protocol.md, "The steps").
func (l *Lock) mark(ctx context.Context) error {
	p, self := l.p, l.a.Self
	rec := lockrec.Record{Format: lockrec.Format, AcquiredAt: p.Time().Now(), Nonce: rand.Text(), LockDev: l.id.Dev, LockIno: l.id.Ino}
	if self != nil {
		rec.Identity = *self
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
		switch {
		case m.Err != nil:
			return m.Err // out of descriptors: nothing known of it
		case m.Foreign():
			// A user's file: never removed, and no mark beside it.
			return &fs.PathError{Op: "lock", Path: lockrec.MarkPath(l.path), Err: lockrec.ErrNotLockFile}
		case !m.Names(l.id) && (self == nil || !m.Dead(p, self)):
			return lockrec.HeldBy(l.path, m.Record)
		}
		if err := l.clearMark(ctx, m); err != nil {
			return err
		}
	}
	return lockrec.HeldBy(l.path, lockrec.ReadHolder(p.FS, l.path))
}

// clearMark removes mark m under the guard, while the path names the
// pinned file. Without an identity there is no guard (a guard is a
// stamp): only a mark naming the pinned file is cleared then.
func (l *Lock) clearMark(ctx context.Context, m lockrec.Mark) error {
	p := l.p
	if l.a.Guard != nil {
		g, err := l.a.Guard(ctx, l.path)
		if err != nil {
			return err
		}
		defer g.Release()
	}
	if now, err := p.FS.FileID(l.path); err != nil || !now.SameOpen(l.id) {
		return errSwapped
	}
	if err := lockrec.RemoveMarkIf(p.FS, l.path, m.Raw); err != nil {
		return err
	}
	lockrec.Sweep(p, l.a.Self, l.path) // a crash's leftovers go too
	return nil
}

// unmark removes this attempt's own mark. An attempt backing off, or a
// holder whose Check saw its mark lost, reads it first: it may be
// another's by now.
func (l *Lock) unmark() error {
	if l.nonce == "" {
		return nil
	}
	if !l.held || l.markLost {
		m := lockrec.ReadMark(l.p.FS, l.at)
		if m.Record == nil || m.Record.Nonce != l.nonce {
			l.nonce = ""
			return nil
		}
	}
	l.nonce = ""
	return l.removeName(lockrec.MarkPath(l.path))
}

// liveHolder is the record of a busy lock's mark, unless its writer is
// dead: the lock is then another's, not marked yet.
func liveHolder(p *platform.Platform, self *platform.Identity, path string) *lockrec.Record {
	m := lockrec.ReadMark(p.FS, path)
	if !m.Record.Known() || m.Dead(p, self) {
		return nil
	}
	return m.Record
}
