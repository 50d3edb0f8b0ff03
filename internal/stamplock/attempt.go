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

// maxTries bounds one attempt's create-probe-reclaim rounds, so an attempt
// that keeps losing races returns (held) instead of spinning.
const maxTries = 8

// A stamp that finds a live mark after it was written waits for the mark to
// go (its SQLite writer backing off) this many times, doubling from
// markWaitFirst (about 31 ms in all), before it backs off itself.
const (
	markWaits     = 5
	markWaitFirst = time.Millisecond
)

// Lock is a lock file this process stamped.
type Lock struct {
	fsys lockfs.FS
	path string
	// at is path made absolute when the attempt began (fsx.Abs): the
	// lock is judged (Check) by what it names, whatever the process's
	// working directory is later.
	at      string
	stamp   lockrec.Record
	content []byte
	// file stays open while the lock is held: it pins the inode, so that
	// id names this file and no other for as long as the lock lives.
	file   lockfs.File
	id     lockfs.FileID
	pinned bool // id is known
	guard  bool // a reclaim guard's file, not the lock's
	// dir is the lock's directory, kept from before the file is created
	// to Release: the file at the path is identified, and removed,
	// through it, so that Release acts on the file stamped even once
	// the path names another (a working directory changed, a symlink in
	// the path flipped).
	dir fsx.Dir
}

// base is the lock file's name in its directory.
func (l *Lock) base() string { return filepath.Base(l.path) }

// At is the lock's path made absolute when it was taken: where Check
// looks.
func (l *Lock) At() string { return l.at }

// close closes the lock's file and its directory.
func (l *Lock) close() {
	if l.file != nil {
		l.file.Close()
		l.file = nil
	}
	l.dir.Close()
}

// errLost says the file this attempt stamped was gone or replaced before
// it could be confirmed, or changed before it could be converted: the
// attempt starts over.
var errLost = errors.New("stamplock: lock file lost before it was confirmed")

// Acquire makes one attempt to take the lock at path for here, this
// process's identity: it creates and stamps the file, or judges the file
// that is there, converting it when stale (docs/protocol.md). It returns
// the lock, a *lockrec.HeldError (proclock.HeldError) when the lock is
// held, or another error (a
// directory at path, a missing parent, permission denied, a file that is
// not a lock file). ctx ends its short waits for a SQLite process that is
// backing off.
func Acquire(ctx context.Context, p *platform.Platform, here platform.Identity, path string) (*Lock, error) {
	return acquire(ctx, p, here, path, 0, false)
}

// AcquireSeen is Acquire for an attempt that expects a file at path: the
// attempt before it, of the same acquisition, found the lock held there.
// It looks first, and creates only when the look finds no file: a create
// made while the file is there fails with nothing at the path changed
// (its temporary file is made and removed: two of the filesystem's
// journalled changes, on a waiter's way to the lock after its holder
// died), so the look it saves the create for is the look the failed
// create leads to, and the attempt's steps are Acquire's from there.
func AcquireSeen(ctx context.Context, p *platform.Platform, here platform.Identity, path string) (*Lock, error) {
	return acquire(ctx, p, here, path, 0, true)
}

// acquire is Acquire for a lock or, at depth > 0, for a reclaim guard;
// with lookFirst it is AcquireSeen.
func acquire(ctx context.Context, p *platform.Platform, here platform.Identity, path string, depth int, lookFirst bool) (*Lock, error) {
	var last Probe
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
		var err error
		last, err = Look(p, here, path)
		if err != nil {
			return nil, err
		}
		switch last.State {
		case lockrec.StateHeld:
			return nil, held(path, last)
		case lockrec.StateStale:
			if depth > 0 {
				// A guard: the file mechanism's own, never SQLite's.
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

// held is the error of an attempt that found the lock at path held, as pr
// saw it.
func held(path string, pr Probe) error {
	e := &lockrec.HeldError{Path: path, Holder: pr.Holder()}
	if pr.Reason == ReasonLocked {
		e.Reason = pr.LockedBy
	}
	return e
}

// newLock is the lock here is about to stamp at path, its directory kept.
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

// create makes the lock file exclusively, its stamp written whole before
// it appears at the path (lockrec.CreateWhole); for the lock itself
// (depth 0) it then settles with any SQLite holder.
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
		// Without hard links: created, and its stamp not written.
		l.abandon()
		return nil, err
	}
	if depth > 0 {
		if err := l.confirm(p, here); err != nil {
			l.abandon()
			return nil, err
		}
		return l, nil
	}
	return l.settle(ctx, p, here)
}

// settle runs once the stamp is written: it looks for a SQLite holder's
// mark (the stamp was written first, so a SQLite process marking now will
// see the stamp and back off), waits a little for a live one to go, and
// then confirms that the file at the path is still ours. A mark that stays
// means a SQLite process holds this very file: the stamp is emptied, never
// removed, and the lock is held by the mark's holder.
//
// A SQLite lock on the file (lockrec.KernelLocked) counts as a live mark
// whose holder is unknown: a SQLite process locks the file before it
// looks for a stamp, as it marks it before it looks, so of the two, the
// one that looks second sees the other; and a SQLite connection that
// writes no mark (python's sqlite3, the sqlite3 shell, a proclock holder
// through another name of the file) keeps this process out as a marked
// holder does (docs/protocol.md, "The kernel's locks").
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
			// Out of descriptors: nothing known of the mark. The
			// stamp is whole, so a SQLite process that locks the
			// file from now on finds it and backs off, and none had
			// locked it: the file is removed, as a release removes it.
			l.withdraw()
			return nil, m.Err
		}
		if !locked && !m.Live(p, &here) {
			break
		}
		// The mark going away (its writer backing off) ends the wait.
		if i < markWaits {
			if _, err := wake.Pause(ctx, p, filepath.Dir(l.path), lockrec.Watched(l.path), 0, wait); err == nil {
				wait *= 2
				continue
			}
		}
		l.backOff()
		e := &lockrec.HeldError{Path: l.path, Holder: m.Holder()}
		if e.Holder == nil && locked {
			e.Reason = lockrec.SQLiteLockReason
		}
		return nil, e
	}
	if err := l.confirm(p, here); err != nil {
		l.abandon()
		return nil, err
	}
	return l, nil
}

// backOff gives the file back (giveBack) and closes it. The file stays:
// the SQLite process whose mark stayed holds this very file, and once it
// lets go, the database says at once that nobody holds it.
func (l *Lock) backOff() {
	l.giveBack()
	l.close()
}

// abandon gives up a file this attempt created or converted before it
// was confirmed (its stamp failed to be written, or to be confirmed), and
// closes it. A guard still at its path is removed: only the file
// mechanism opens guards, and none takes one this young. The lock file is
// never removed, only given back (giveBack): only holders remove the path
// (docs/protocol.md, "Why the order keeps two holders out"), and while
// its stamp was not whole, a SQLite process may have locked this file,
// checked that the path names it, and be about to mark it; a new file at
// the path would then be taken beside it.
func (l *Lock) abandon() {
	if l.guard {
		if ours, _ := l.ours(); ours {
			l.dir.Remove(l.base())
		}
	} else {
		l.giveBack()
	}
	l.close()
}

// withdraw removes the file this attempt stamped whole, if the path still
// names it, and closes it: for an attempt that cannot go on (out of
// descriptors) and whose file no SQLite process had locked after the
// stamp was written (settle), so that nothing is left behind.
func (l *Lock) withdraw() {
	ours, _ := l.ours() // while the file is open: its inode is its own
	l.file.Close()
	l.file = nil
	if ours {
		l.dir.Remove(l.base())
	}
	l.close()
}

// giveBack replaces what this attempt wrote into the lock file (its stamp,
// or the part of it that was written), if the path still names that file
// and it holds nothing else, with an empty SQLite database: a lock nobody
// holds, to convert at once, not a stamp of this live process, which would
// hold the lock for as long as it lives, nor a file that reads as a stamp
// on its way for 30 s.
func (l *Lock) giveBack() {
	if ours, _ := l.ours(); !ours {
		return
	}
	if seen, err := lockrec.Read(l.fsys, l.path); err == nil && bytes.HasPrefix(l.content, seen.Content) {
		rewrite(l.file, lockrec.EmptyDatabase())
	}
}

// confirm checks, after stamping, that the file at path is still the one
// stamped: a reclaimer may have judged it stale between the two steps and
// another holder stamped a new one since.
func (l *Lock) confirm(p *platform.Platform, here platform.Identity) error {
	ours, err := l.ours()
	if ours || err != nil {
		return err
	}
	pr, err := Look(p, here, l.path)
	if err != nil {
		return err
	}
	if pr.State == lockrec.StateAbsent {
		return errLost
	}
	return held(l.path, pr)
}

// ours reports whether the file at path is the one l stamped. While l
// keeps its file open, no other file can take its inode, so equal
// identities prove it; where the FS cannot identify files (or fails to),
// the stamp's bytes, with their random nonce, are compared instead.
func (l *Lock) ours() (bool, error) {
	ours, _, err := l.owned()
	return ours, err
}

// owned is ours, with the number of names the file has when the FS tells
// (0 when unknown).
func (l *Lock) owned() (bool, uint64, error) {
	if l.pinned {
		id, err := l.dir.FileID(l.base())
		switch {
		case err == nil:
			return id.SameOpen(l.id), id.Links, nil
		case errors.Is(err, fs.ErrNotExist):
			return false, 0, nil
		}
		// The identity could not be read this time: the bytes tell.
	}
	seen, err := lockrec.Read(l.fsys, l.at)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return false, 0, nil
	case err != nil:
		return false, 0, err
	case seen.Kind == lockrec.Foreign && seen.Content == nil:
		// Perhaps not ours, perhaps a failed read: not known, so not
		// to be removed, nor given up for lost.
		return false, 0, &fs.PathError{Op: "read", Path: l.path, Err: errUnreadable}
	}
	return bytes.Equal(seen.Content, l.content), seen.ID.Links, nil
}

// errUnreadable says a lock file could not be read as a stamp.
var errUnreadable = errors.New("stamplock: lock file unreadable")
