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

// guardPath is the path of the guard of the lock (or guard) at path: one
// process at a time holds "<path>.stale" (lockrec.GuardSuffix), itself a
// stamped lock file, while it changes the lock's files without being their
// holder (docs/protocol.md); a long base name's is shortened
// (docs/protocol.md, "Names").
func guardPath(path string) string { return lockrec.Sidecar(path, lockrec.GuardSuffix) }

// maxGuardDepth bounds the nesting of guards (a stale guard is reclaimed
// under its own guard). The deepest guard is reclaimed without one, so a
// string of crashed reclaimers never wedges a lock.
const maxGuardDepth = 3

// Guard takes the guard of the lock at path, for a change to the lock's
// files under it; Release lets it go. A guard held by someone else is a
// *lockrec.HeldError for the lock at path, its holder unknown: the lock is
// being reclaimed.
func Guard(ctx context.Context, p *platform.Platform, here platform.Identity, path string) (*Lock, error) {
	guard, err := acquire(ctx, p, here, guardPath(path), 1, false)
	if _, ok := errors.AsType[*lockrec.HeldError](err); ok {
		return nil, &lockrec.HeldError{Path: path}
	}
	return guard, err
}

// GuardFault is the error that an attempt needing the guard of the lock at
// path (to convert or clear a stale file, or remove a dead mark) meets at
// the guard's name, judged from here: a file there that is not a lock file
// (lockrec.ErrNotLockFile), a directory, one this user may not read; nil
// when the guard can be taken or waited for. Inspect asks it of a stale
// lock, so that status and Acquire agree (docs/protocol.md, "Judging what
// is there"). A guard that is held (a reclaim under way, or an empty
// guard within its 30 s) is a held error, as Acquire finds it.
func GuardFault(p *platform.Platform, here platform.Identity, path string) error {
	pr, err := Look(p, here, guardPath(path))
	if err == nil && pr.State == lockrec.StateHeld {
		return &lockrec.HeldError{Path: path}
	}
	return err
}

// convert takes the stale lock file that pr saw at path for here: under
// the guard, if the file is still the one judged and no live mark has
// appeared, it writes its stamp into the file in place, keeping its inode,
// and settles with any SQLite process. The file is never renamed or
// removed: a SQLite process may have just locked it (docs/protocol.md).
// errLost means the file changed meanwhile: look again.
func convert(ctx context.Context, p *platform.Platform, here platform.Identity, path string, pr Probe) (*Lock, error) {
	guard, err := Guard(ctx, p, here, path)
	if err != nil {
		return nil, err
	}
	defer guard.Release()
	if pr.Reason != ReasonFree {
		// A dead holder's file: a crash, whose leftovers go too.
		lockrec.Sweep(p, &here, path)
	}
	f, err := reopen(p, here, path, pr, true)
	if err != nil {
		return nil, err
	}
	// A file a SQLite connection has locked is never written into, not
	// even for a moment: it may be a database in use by a program that
	// writes no mark, or a proclock holder's through another name. So
	// SQLite's lock is taken on it for the write, where the FS can
	// (docs/protocol.md, "The kernel's locks").
	unlock, why, err := lockForWrite(p, path, f)
	if err != nil || why != "" {
		f.Close()
		if err != nil {
			return nil, err
		}
		return nil, &lockrec.HeldError{Path: path, Reason: why}
	}
	// Judged again under SQLite's lock: the guard is the path's, and
	// a converter through another name of the file (a hard link) takes
	// another guard, but the same SQLite lock, so of two such
	// converters the second finds the first one's stamp here.
	if now, err := lockrec.Sight(p.FS, f); err != nil || !now.Same(pr.seen) {
		unlock()
		f.Close()
		if err != nil {
			return nil, err
		}
		return nil, errLost
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
	unlock() // a SQLite process that locks the file from now on finds the stamp
	if err != nil {
		l.close()
		return nil, err
	}
	return l.settle(ctx, p, here)
}

// lockForWrite takes SQLite's exclusive lock on f, the lock file at path
// that convert is to write, through another handle of it, and returns the
// function that lets go of it: no SQLite connection holds the file while
// it is written, and none can lock it until then (a connection's attempt
// finds it locked, as it would a writer's). Where the FS has no byte-range
// locks (a wasm guest), none is taken. why says what holds the file
// instead, when something does: a SQLite lock, or a flock(2) lock
// (lockrec.LockedReason).
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
	same, err := sameFile(p.FS, f, g)
	if err != nil || !same {
		g.Close()
		return unlock, "", errors.Join(err, errLost)
	}
	got, err := rl.TryLockRange(g, lockrec.SQLitePendingByte, lockrec.SQLiteLockBytes)
	if err != nil || !got {
		g.Close()
		return unlock, lockrec.SQLiteLockReason, err
	}
	return func() { g.Close() }, "", nil
}

// sameFile reports whether f and g are open files of one inode.
func sameFile(fsys lockfs.FS, f, g lockfs.File) (bool, error) {
	a, err := fsys.FileIDOf(f)
	if err != nil {
		return false, err
	}
	b, err := fsys.FileIDOf(g)
	if err != nil {
		return false, err
	}
	return a.SameOpen(b), nil
}

// Clear makes the stale lock file that pr saw at path (or the dead stamp in
// a file a live mark holds, pr.StampDead) an empty SQLite database
// (lockrec.EmptyDatabase) in place, under the guard, if it is still the one
// judged: what a SQLite process does with a dead holder's stamp before it
// locks the file. A mark beside it does not matter: a SQLite holder never
// reads its file, and no file-mechanism process holds a dead stamp. A file
// that changed meanwhile is left alone; the caller looks again.
func Clear(ctx context.Context, p *platform.Platform, here platform.Identity, path string, pr Probe) error {
	guard, err := Guard(ctx, p, here, path)
	if err != nil {
		return err
	}
	defer guard.Release()
	lockrec.Sweep(p, &here, path) // a dead holder's stamp: a crash, whose leftovers go too
	f, err := reopen(p, here, path, pr, false)
	if errors.Is(err, errLost) {
		return nil
	}
	if err != nil {
		return err
	}
	err = rewrite(f, lockrec.EmptyDatabase())
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// reopen opens for writing the file at path, if it is still the one pr saw
// there, unchanged (and, with unmarked, with no live mark beside it); else
// errLost. The file is judged through the very handle that is returned:
// judged by its path and opened after, it could be another file that took
// the path and the inode number of the one judged in between (a stale
// file's holder removing it, and a new holder creating its own, which the
// filesystem gives the freed number), and its live stamp would be
// overwritten (docs/protocol.md, "The lock file is judged through the
// handle that writes it").
func reopen(p *platform.Platform, here platform.Identity, path string, pr Probe, unmarked bool) (lockfs.File, error) {
	f, err := p.FS.OpenFile(path, os.O_RDWR, 0)
	if errors.Is(err, fs.ErrPermission) {
		if now, rerr := lockrec.Read(p.FS, path); rerr != nil || !now.Same(pr.seen) {
			return nil, errLost // changed since: look again
		}
		// A file this user may read, not write: the same words as for
		// a free lock so shared (docs/security.md).
		return nil, fmt.Errorf("%w: %w", lockrec.ErrReadOnly, err)
	}
	if err != nil {
		return nil, ignoreNotExist(err, errLost)
	}
	// The open follows a symlink, and what is at the path may have
	// changed since pr's look: the identity and the bytes tell whether
	// this is the file judged.
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

// rewrite replaces an open file's bytes with data, in place. Where data,
// made to cover the old bytes (lockrec.Cover: a stamp padded, the empty
// database followed by zeros), fits one page (lockrec.OnePage), it is one
// write: a writer killed at any instant leaves the old bytes or the new,
// and no reader finds the file empty or cut (docs/protocol.md, "Every
// record appears whole"). A longer file (another tool's) is emptied
// first, so that a reader sees an empty file (held, for 30 s) or the new
// bytes' start, never the old bytes' tail.
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

// reclaim removes the stale guard file that pr saw at path, so that the
// caller can create it again. Under the next guard it checks that the file
// is still the one probed, renames it to a private name, checks again, and
// removes it, or links it back if it changed in between. A reclaim that
// finds the file changed or gone returns nil: the caller looks again.
func reclaim(ctx context.Context, p *platform.Platform, here platform.Identity, path string, pr Probe, depth int) error {
	if depth < maxGuardDepth {
		guard, err := acquire(ctx, p, here, guardPath(path), depth+1, false)
		if _, ok := errors.AsType[*lockrec.HeldError](err); ok {
			return &lockrec.HeldError{Path: path}
		}
		if err != nil {
			return err
		}
		defer guard.Release()
	}
	lockrec.Sweep(p, &here, path) // a stale guard: a crash, whose leftovers go too
	return setAside(p, here, path, pr.seen)
}

// setAside removes the file at path if it is still the one seen.
func setAside(p *platform.Platform, here platform.Identity, path string, seen lockrec.Sighting) error {
	now, err := lockrec.Read(p.FS, path)
	if err != nil {
		return ignoreNotExist(err, nil)
	}
	if !now.Same(seen) {
		return nil
	}
	private := lockrec.Sidecar(path, fmt.Sprintf("%s-%d-%s", lockrec.GuardSuffix, here.PID, rand.Text()))
	if err := p.FS.Rename(path, private); err != nil {
		return ignoreNotExist(err, nil)
	}
	moved, err := lockrec.Read(p.FS, private)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil // swept meanwhile (lockrec.Sweep): it held a dead stamp
	case err == nil && moved.Same(seen):
		return ignoreNotExist(p.FS.Remove(private), nil)
	}
	// Not the file judged stale: it goes back where it was. If a new
	// holder has already created path, the two names are the same file's
	// or the new holder's, and the link fails harmlessly with EEXIST.
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
