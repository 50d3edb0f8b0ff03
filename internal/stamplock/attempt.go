package stamplock

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"io/fs"
	"path/filepath"
	"time"

	"github.com/proclock/proclock/internal/fsx"
	"github.com/proclock/proclock/internal/lockrec"
	"github.com/proclock/proclock/internal/wake"
	"github.com/proclock/proclock/lockfs"
	"github.com/proclock/proclock/platform"
)

// maxTries bounds one attempt's rounds: one that keeps losing races is held.
const maxTries = 8

// A stamp that finds a live mark waits for it to go (its writer backing
// off) this many times, doubling from markWaitFirst, before it backs off.
const (
	markWaits     = 5
	markWaitFirst = time.Millisecond
)

// Lock is a lock file this process stamped.
type Lock struct {
	fsys    lockfs.FS
	path    string
	at      string // path made absolute (fsx.Abs), where Check looks
	stamp   lockrec.Record
	content []byte
	// file stays open while held: its inode cannot be reused, so id
	// names it alone (docs/design.md, "The pinned inode").
	file   lockfs.File
	id     lockfs.FileID
	pinned bool // id is known
	guard  bool // a reclaim guard's file, not the lock's
	// dir is the lock's directory, kept until Release, which identifies
	// and removes the file through it whatever the path names later.
	dir fsx.Dir
}

// base is the lock file's name in its directory.
func (l *Lock) base() string { return filepath.Base(l.path) }

// At is the lock's path made absolute when it was taken: where Check looks.
func (l *Lock) At() string { return l.at }

// close closes the lock's file and its directory.
func (l *Lock) close() {
	l.closeFile()
	l.dir.Close()
}

// errLost says the file changed before it was confirmed or converted.
var errLost = errors.New("stamplock: lock file lost before it was confirmed")

// Acquire makes one attempt to take the lock at path for here, this
// process's identity (docs/protocol.md); held is a *lockrec.HeldError. ctx
// ends its short waits for a SQLite process backing off. seen, after an
// attempt that found the lock held, looks first, sparing a create bound to
// fail on a waiter's way.
func Acquire(ctx context.Context, p *platform.Platform, here platform.Identity, path string, seen bool) (*Lock, error) {
	return acquire(ctx, p, here, path, 0, seen)
}

// acquire is Acquire (lookFirst: seen), or at depth > 0 a guard's.
func acquire(ctx context.Context, p *platform.Platform, here platform.Identity, path string, depth int, lookFirst bool) (*Lock, error) {
	for range maxTries {
		if !lookFirst {
			l, err := create(ctx, p, here, path, depth)
			switch {
			case err == nil:
				return l, nil
			case errors.Is(err, errLost):
				continue
			case !errors.Is(err, fs.ErrExist):
				return nil, err
			}
		}
		lookFirst = false
		last, err := Look(p, here, path, false)
		if err != nil {
			return nil, err
		}
		switch last.State {
		case lockrec.StateHeld:
			return nil, held(path, last)
		case lockrec.StateStale:
			if depth > 0 { // a guard: never SQLite's
				if err := reclaim(ctx, p, here, path, last, depth); err != nil {
					return nil, err
				}
				continue
			}
			l, err := convert(ctx, p, here, path, last)
			if errors.Is(err, errLost) {
				continue
			}
			return l, err
		}
	}
	return nil, &lockrec.HeldError{Path: path}
}

// held is the error of an attempt that found the lock at path held.
func held(path string, pr Probe) error {
	e := &lockrec.HeldError{Path: path, Holder: pr.Holder(), Reason: pr.LockedBy}
	if r := pr.Stamp; e.Holder != nil {
		if pr.Mark != nil {
			r = pr.Mark.Record
		}
		e.Since = r.AcquiredAt
	}
	return e
}

// newLock is the lock here is about to stamp at path.
func newLock(p *platform.Platform, here platform.Identity, path string) (*Lock, error) {
	dir, err := fsx.KeepDir(p.FS, filepath.Dir(path))
	if err != nil {
		return nil, err
	}
	l := &Lock{fsys: p.FS, path: path, at: fsx.Abs(p.FS, path), dir: dir, stamp: lockrec.Record{
		Format:     lockrec.Format,
		Identity:   here,
		AcquiredAt: p.Time().Now(),
		Nonce:      rand.Text(),
	}}
	l.content = l.stamp.Marshal()
	return l, nil
}

// create makes the lock file, or at depth > 0 a guard, whole
// (lockrec.CreateWhole); a lock file then settles with any SQLite holder.
func create(ctx context.Context, p *platform.Platform, here platform.Identity, path string, depth int) (*Lock, error) {
	l, err := newLock(p, here, path)
	if err != nil {
		return nil, err
	}
	f, placed, err := lockrec.CreateWhole(p.FS, path, l.content, here.PID)
	if err != nil && !placed {
		l.close()
		return nil, err
	}
	l.file, l.guard = f, depth > 0
	if id, err := p.FS.FileIDOf(f); err == nil {
		l.id, l.pinned = id, true
	}
	if err != nil {
		l.abandon() // without hard links: created, its stamp not written
		return nil, err
	}
	if depth > 0 {
		return l.confirm(p, here)
	}
	return l.settle(ctx, p, here)
}

// settle, once the stamp is written, waits a little for a live mark or a
// SQLite lock on the file to go (docs/protocol.md, "The kernel's locks"),
// then confirms the file. One that stays holds it: the stamp is given back.
func (l *Lock) settle(ctx context.Context, p *platform.Platform, here platform.Identity) (*Lock, error) {
	wait := markWaitFirst
	for i := 0; ; i++ {
		locked, err := lockrec.KernelLocked(p.FS, l.file)
		if err != nil {
			l.abandon()
			return nil, err
		}
		m := lockrec.ReadMark(p.FS, l.path)
		if m.Err != nil && !locked {
			// Out of descriptors: nothing known of the mark. No SQLite
			// process has locked the file, and any that does finds the
			// stamp: it is removed, as a release does.
			l.withdraw()
			return nil, m.Err
		}
		if !locked && !m.Live(p, &here) {
			break
		}
		if i < markWaits {
			if _, err := wake.Pause(ctx, p, filepath.Dir(l.path), lockrec.Watched(l.path), 0, wait); err == nil {
				wait *= 2
				continue
			}
		}
		l.abandon() // a lock file's: given back
		e := lockrec.HeldBy(l.path, m.Record)
		if e.Holder == nil && locked {
			e.Reason = lockrec.SQLiteLockReason
		}
		return nil, e
	}
	return l.confirm(p, here)
}

// abandon gives up, and closes, a file this attempt did not confirm. A lock
// file is only given back, never removed: a SQLite process may be about to
// mark it (docs/protocol.md, "Why the order keeps two holders out").
func (l *Lock) abandon() {
	if l.guard {
		l.withdraw()
		return
	}
	l.giveBack()
	l.close()
}

// withdraw removes the file this attempt stamped whole (a guard's, or a
// lock file's that no SQLite process can have locked: settle), if the path
// still names it, and closes it.
func (l *Lock) withdraw() {
	ours, _, _ := l.owned() // while the file is open: its inode is its own
	l.closeFile()
	if ours {
		l.dir.Remove(l.base())
	}
	l.close()
}

// giveBack writes the empty database, free at once, over what this attempt
// wrote, if the path still names the file and it holds nothing else.
func (l *Lock) giveBack() {
	if ours, _, _ := l.owned(); !ours {
		return
	}
	if seen, err := lockrec.Read(l.fsys, l.path); err == nil && bytes.HasPrefix(l.content, seen.Content) {
		rewrite(l.file, lockrec.EmptyDatabase())
	}
}

// confirm checks, after stamping, that the path still names the file
// stamped; else it abandons it, the lock lost (absent) or held.
func (l *Lock) confirm(p *platform.Platform, here platform.Identity) (*Lock, error) {
	ours, _, err := l.owned()
	if err == nil && !ours {
		var pr Probe
		if pr, err = Look(p, here, l.path, false); err == nil {
			err = errLost
			if pr.State != lockrec.StateAbsent {
				err = held(l.path, pr)
			}
		}
	}
	if err != nil {
		l.abandon()
		return nil, err
	}
	return l, nil
}

// owned reports whether the path names the file l stamped (by identity
// while it is open, else by the stamp's bytes), and its links (0: unknown).
func (l *Lock) owned() (bool, uint64, error) {
	if l.pinned {
		id, err := l.dir.FileID(l.base())
		switch {
		case err == nil:
			return id.SameOpen(l.id), id.Links, nil
		case errors.Is(err, fs.ErrNotExist):
			return false, 0, nil
		}
	}
	seen, err := lockrec.Read(l.fsys, l.at)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return false, 0, nil
	case err != nil:
		return false, 0, err
	case seen.Kind == lockrec.Foreign && seen.Content == nil:
		// Not known: neither to be removed nor given up for lost.
		return false, 0, &fs.PathError{Op: "read", Path: l.path, Err: errUnreadable}
	}
	return bytes.Equal(seen.Content, l.content), seen.ID.Links, nil
}

var errUnreadable = errors.New("stamplock: lock file unreadable")
