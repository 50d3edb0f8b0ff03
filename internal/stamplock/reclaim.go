package stamplock

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/proclock/proclock/internal/lockrec"
	"github.com/proclock/proclock/lockfs"
	"github.com/proclock/proclock/platform"
)

// guardPath is the guard of the lock (or guard) at path: a stamped file
// held while one changes the lock's files unheld (docs/protocol.md).
func guardPath(path string) string { return lockrec.Sidecar(path, lockrec.GuardSuffix) }

// maxGuardDepth bounds guards of guards; the deepest is reclaimed without
// one, so that crashed reclaimers never wedge a lock.
const maxGuardDepth = 3

// Guard takes the guard of the lock at path; Release lets it go. One held
// by someone else is a *lockrec.HeldError for path, holder unknown.
func Guard(ctx context.Context, p *platform.Platform, here platform.Identity, path string) (*Lock, error) {
	return guard(ctx, p, here, path, 1)
}

// guard is Guard, the guard at depth.
func guard(ctx context.Context, p *platform.Platform, here platform.Identity, path string, depth int) (*Lock, error) {
	g, err := acquire(ctx, p, here, guardPath(path), depth, false)
	if _, ok := errors.AsType[*lockrec.HeldError](err); ok {
		return nil, &lockrec.HeldError{Path: path}
	}
	return g, err
}

// GuardFault is the error an attempt needing the guard of the lock at path
// meets there (a held guard, no lock file); Inspect asks it, to agree.
func GuardFault(p *platform.Platform, here platform.Identity, path string) error {
	pr, err := Look(p, here, guardPath(path), false)
	if err == nil && pr.State == lockrec.StateHeld {
		return &lockrec.HeldError{Path: path}
	}
	return err
}

// convert stamps in place, under the guard, the stale lock file pr saw at
// path if it is unchanged and unmarked, never renaming or removing it: a
// SQLite process may have just locked it (docs/protocol.md).
func convert(ctx context.Context, p *platform.Platform, here platform.Identity, path string, pr Probe) (*Lock, error) {
	guard, err := Guard(ctx, p, here, path)
	if err != nil {
		return nil, err
	}
	defer guard.Release()
	if pr.Reason != ReasonFree {
		lockrec.Sweep(p, &here, path) // a crash was seen: its leftovers go too
	}
	f, unlock, err := openToWrite(p, here, path, pr, true)
	if err != nil {
		return nil, err
	}
	l, err := newLock(p, here, path)
	if err != nil {
		unlock()
		f.Close()
		return nil, err
	}
	l.content = lockrec.Cover(l.content, pr.seen.Size)
	l.file, l.id, l.pinned = f, pr.seen.ID, pr.seen.ID != (lockfs.FileID{})
	err = rewrite(f, l.content)
	unlock() // a SQLite process that locks it from now on finds the stamp
	if err != nil {
		l.close()
		return nil, err
	}
	return l.settle(ctx, p, here)
}

// openToWrite opens the file pr saw at path for writing (reopen), under
// SQLite's lock on it where the FS can, and judges it again under that
// lock: a file a connection has locked is never written, and a writer
// through another name (a hard link) takes another guard but the same
// lock, so the second finds the first's write (docs/protocol.md, "The
// kernel's locks", "One file, many names"). unlock lets go of the lock.
func openToWrite(p *platform.Platform, here platform.Identity, path string, pr Probe, unmarked bool) (f lockfs.File, unlock func(), err error) {
	if f, err = reopen(p, here, path, pr, unmarked); err != nil {
		return nil, nil, err
	}
	unlock, why, err := lockForWrite(p, path, f)
	if err == nil && why != "" {
		err = &lockrec.HeldError{Path: path, Reason: why}
	}
	if err == nil {
		var now lockrec.Sighting
		if now, err = lockrec.Sight(p.FS, f); err == nil && !now.Same(pr.seen) {
			err = errLost
		}
		if err != nil {
			unlock()
		}
	}
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	return f, unlock, nil
}

// lockForWrite takes SQLite's lock on f, the file at path, through another
// handle, where the FS can; why says what lock holds the file instead.
func lockForWrite(p *platform.Platform, path string, f lockfs.File) (unlock func(), why string, err error) {
	unlock = func() {}
	if lockrec.Flocked(p.FS, f) {
		return unlock, lockrec.FlockReason, nil
	}
	rl, ok := p.FS.(lockfs.RangeLocker)
	if !ok {
		return unlock, "", nil
	}
	g, err := rl.OpenLockable(path)
	if err != nil {
		return unlock, "", ignoreNotExist(err, errLost)
	}
	a, err := p.FS.FileIDOf(f)
	b, gerr := p.FS.FileIDOf(g)
	if err != nil || gerr != nil || !a.SameOpen(b) {
		g.Close()
		return unlock, "", errors.Join(err, gerr, errLost)
	}
	got, err := rl.TryLockRange(g, lockrec.SQLitePendingByte, lockrec.SQLiteLockBytes)
	if err != nil || !got {
		g.Close()
		return unlock, lockrec.SQLiteLockReason, err
	}
	return func() { g.Close() }, "", nil
}

// Clear makes the stale file pr saw at path (or a dead stamp beside a live
// mark) the empty database in place, under the guard, if it is unchanged.
func Clear(ctx context.Context, p *platform.Platform, here platform.Identity, path string, pr Probe) error {
	guard, err := Guard(ctx, p, here, path)
	if err != nil {
		return err
	}
	defer guard.Release()
	lockrec.Sweep(p, &here, path) // a crash was seen: its leftovers go too
	f, unlock, err := openToWrite(p, here, path, pr, false)
	if errors.Is(err, errLost) {
		return nil
	}
	if err != nil {
		return err
	}
	err = rewrite(f, lockrec.EmptyDatabase())
	unlock()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// reopen opens the file at path for writing if it is the one pr saw (and,
// with unmarked, no live mark is beside it), judged through that handle
// (docs/protocol.md, "The lock file is judged through the handle that
// writes it"); else errLost.
func reopen(p *platform.Platform, here platform.Identity, path string, pr Probe, unmarked bool) (lockfs.File, error) {
	f, err := p.FS.OpenFile(path, os.O_RDWR, 0)
	if errors.Is(err, fs.ErrPermission) {
		if now, rerr := lockrec.Read(p.FS, path); rerr != nil || !now.Same(pr.seen) {
			return nil, errLost // changed since: look again
		}
		return nil, fmt.Errorf("%w: %w", lockrec.ErrReadOnly, err)
	}
	if err != nil {
		return nil, ignoreNotExist(err, errLost)
	}
	now, err := lockrec.Sight(p.FS, f)
	switch {
	case err != nil:
		f.Close()
		return nil, err
	case !now.Same(pr.seen) || (unmarked && lockrec.ReadMark(p.FS, path).Live(p, &here)):
		f.Close()
		return nil, errLost
	}
	return f, nil
}

// rewrite replaces an open file's bytes with data, in one write where it
// can (docs/protocol.md, "Every record appears whole"); a longer file is
// emptied first.
func rewrite(f lockfs.File, data []byte) error {
	if info, err := f.Stat(); err == nil {
		if covered := lockrec.Cover(data, info.Size()); int64(len(covered)) >= info.Size() && len(covered) <= lockrec.OnePage {
			_, err := f.WriteAt(covered, 0)
			return err
		}
	}
	if err := f.Truncate(0); err != nil {
		return err
	}
	_, err := f.WriteAt(data, 0)
	return err
}

// reclaim removes, under the next guard, the stale guard file pr saw at
// path if it is unchanged; the caller looks again.
func reclaim(ctx context.Context, p *platform.Platform, here platform.Identity, path string, pr Probe, depth int) error {
	if depth < maxGuardDepth {
		g, err := guard(ctx, p, here, path, depth+1)
		if err != nil {
			return err
		}
		defer g.Release()
	}
	lockrec.Sweep(p, &here, path) // a crash was seen: its leftovers go too
	return setAside(p, here, path, pr.seen)
}

// setAside removes the file at path if it is still the one seen: renamed
// to a private name, checked again, and removed, or linked back.
func setAside(p *platform.Platform, here platform.Identity, path string, seen lockrec.Sighting) error {
	if now, err := lockrec.Read(p.FS, path); err != nil || !now.Same(seen) {
		return ignoreNotExist(err, nil)
	}
	private := lockrec.Sidecar(path, fmt.Sprintf("%s-%d-%s", lockrec.GuardSuffix, here.PID, rand.Text()))
	if err := p.FS.Rename(path, private); err != nil {
		return ignoreNotExist(err, nil)
	}
	moved, err := lockrec.Read(p.FS, private)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil // swept meanwhile: it held a dead stamp
	case err == nil && moved.Same(seen):
		return ignoreNotExist(p.FS.Remove(private), nil)
	}
	// Not the file judged stale: it goes back. A new holder's file at
	// path makes the link fail harmlessly with EEXIST.
	lerr := p.FS.Link(private, path)
	rerr := p.FS.Remove(private)
	if lerr != nil && !errors.Is(lerr, fs.ErrExist) {
		return lerr
	}
	return rerr
}

// ignoreNotExist is err, or instead when err is fs.ErrNotExist.
func ignoreNotExist(err, instead error) error {
	if errors.Is(err, fs.ErrNotExist) {
		return instead
	}
	return err
}
