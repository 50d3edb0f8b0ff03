package stamplock

import (
	"bytes"
	"crypto/rand"
	"errors"
	"fmt"
	"io/fs"

	"github.com/proclock/proclock/lockfs"
	"github.com/proclock/proclock/platform"
)

// FileMode is the mode lock and guard files are created with (before the
// umask): anyone may read who holds a lock; only its owner may write it.
const FileMode fs.FileMode = 0o644

// maxTries bounds one attempt's create-probe-reclaim rounds, so an attempt
// that keeps losing races returns (held) instead of spinning.
const maxTries = 8

// ReasonReclaiming is the reason of a Busy error whose lock file is stale
// but being reclaimed by another process at this moment.
const ReasonReclaiming platform.Reason = "being reclaimed"

// Lock is a lock file this process created and stamped.
type Lock struct {
	fsys    lockfs.FS
	path    string
	stamp   Stamp
	content []byte
	// file stays open while the lock is held: it pins the inode, so that
	// id names this file and no other for as long as the lock lives.
	file   lockfs.File
	id     lockfs.FileID
	pinned bool // id is known
}

// Stamp returns the stamp the holder wrote.
func (l *Lock) Stamp() Stamp { return l.stamp }

// Busy is the error of an attempt that found the lock held.
type Busy struct {
	Path  string
	Probe Probe
}

func (b *Busy) Error() string {
	if h := b.Probe.Holder(); h != nil {
		return fmt.Sprintf("stamplock: %s is held by %s", b.Path, h)
	}
	return fmt.Sprintf("stamplock: %s is held (holder unknown: %s)", b.Path, b.Probe.Reason)
}

// errLost says the file this attempt created was gone or replaced before
// it could be confirmed: the attempt starts over.
var errLost = errors.New("stamplock: lock file lost before it was confirmed")

// Acquire makes one attempt to take the lock at path for here, this
// process's identity: it creates and stamps the file, or judges the file
// that is there, reclaiming it when stale. It returns the lock, a *Busy
// error when the lock is held, or another error (a directory at path, a
// missing parent, permission denied).
func Acquire(p *platform.Platform, here platform.Identity, path string) (*Lock, error) {
	return acquire(p, here, path, 0)
}

// acquire is Acquire for a lock or, at depth > 0, for a reclaim guard.
func acquire(p *platform.Platform, here platform.Identity, path string, depth int) (*Lock, error) {
	var last Probe
	for range maxTries {
		l, err := create(p, here, path)
		switch {
		case err == nil:
			return l, nil
		case errors.Is(err, errLost):
			continue
		case !errors.Is(err, fs.ErrExist):
			return nil, err
		}
		last, err = Look(p, here, path)
		if err != nil {
			return nil, err
		}
		switch last.State {
		case Held:
			return nil, &Busy{Path: path, Probe: last}
		case Stale:
			if err := reclaim(p, here, path, last, depth); err != nil {
				return nil, err
			}
		}
	}
	return nil, &Busy{Path: path, Probe: Probe{State: Held, Reason: last.Reason}}
}

// create makes the lock file with O_EXCL, stamps it, and reads it back: if
// the file at path is not the one just written (a reclaimer judged it stale
// between the two steps and another holder stamped it since), the lock is
// not ours and the other stamp stays.
func create(p *platform.Platform, here platform.Identity, path string) (*Lock, error) {
	f, err := p.FS.OpenFile(path, lockfs.CreateExcl, FileMode)
	if err != nil {
		return nil, err
	}
	l := &Lock{fsys: p.FS, path: path, file: f, stamp: Stamp{
		Format:     Format,
		Identity:   here,
		AcquiredAt: p.Time().Now(),
		Nonce:      rand.Text(),
	}}
	l.content = l.stamp.Marshal()
	if id, err := p.FS.FileIDOf(f); err == nil {
		l.id, l.pinned = id, true
	}
	if _, err := f.Write(l.content); err != nil {
		l.abandon()
		return nil, err
	}
	if err := l.confirm(p, here); err != nil {
		l.abandon()
		return nil, err
	}
	return l, nil
}

// abandon gives up a file this attempt created: removed if it is still
// the one at the path (a stamp of a live process left behind would hold
// the lock for as long as the process lives), and closed.
func (l *Lock) abandon() {
	if ours, _ := l.ours(); ours {
		l.fsys.Remove(l.path)
	}
	l.file.Close()
}

// confirm checks, after stamping, that the file at path is still the one
// created: a reclaimer may have judged it stale between the two steps and
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
	if pr.State == Absent {
		return errLost
	}
	return &Busy{Path: l.path, Probe: pr}
}

// ours reports whether the file at path is the one l created. While l
// keeps its file open, no other file can take its inode, so equal
// identities prove it; where the FS cannot identify files (or fails to),
// the stamp's bytes, with their random nonce, are compared instead.
func (l *Lock) ours() (bool, error) {
	if l.pinned {
		id, err := l.fsys.FileID(l.path)
		switch {
		case err == nil:
			return id.Same(l.id), nil
		case errors.Is(err, fs.ErrNotExist):
			return false, nil
		}
		// The identity could not be read this time: the bytes tell.
	}
	seen, readable, err := read(l.fsys, l.path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return false, nil
	case err != nil:
		return false, err
	case !readable:
		// Perhaps not ours, perhaps a failed read: not known, so not
		// to be removed, nor given up for lost.
		return false, &fs.PathError{Op: "read", Path: l.path, Err: errUnreadable}
	}
	return bytes.Equal(seen.content, l.content), nil
}

// errUnreadable says a lock file could not be read as a stamp.
var errUnreadable = errors.New("stamplock: lock file unreadable")
