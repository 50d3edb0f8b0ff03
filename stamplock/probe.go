package stamplock

import (
	"bytes"
	"errors"
	"io"
	"io/fs"
	"time"

	"github.com/proclock/proclock/lockfs"
	"github.com/proclock/proclock/platform"
)

// MaxStampSize is the most a lock file may hold and still be read: a
// larger one is unreadable.
const MaxStampSize = 64 << 10

// UnstampedWindow is how long an empty, unreadable or unparsable lock file
// counts as held: long enough for a live holder to write its stamp after
// creating the file. Past it (strictly), the file is stale.
const UnstampedWindow = 30 * time.Second

// State is what a probe finds at a lock's path.
type State int

const (
	// Absent: no file at the path.
	Absent State = iota
	// Held: a live holder, one that cannot be judged from here, or a
	// file too young to judge.
	Held
	// Stale: the holder is dead for certain, or the file went
	// unstamped or unreadable for longer than UnstampedWindow.
	Stale
)

// Reasons a probe gives beside the judge's (platform.Reason).
const (
	ReasonUnstamped  platform.Reason = "unstamped"
	ReasonUnreadable platform.Reason = "unreadable"
)

// Probe is what a look at a lock's path found, and how it was judged.
type Probe struct {
	State State
	// Reason says why the file is held or stale: the judge's reason for
	// a stamp, ReasonUnstamped or ReasonUnreadable otherwise.
	Reason platform.Reason
	// Stamp is the parsed stamp; nil when the file had none.
	Stamp *Stamp
	// Age is how long ago the file was last written, for files without a
	// stamp.
	Age time.Duration

	seen sighting
}

// Holder is the recorded identity of the holder, or nil when unknown.
func (p Probe) Holder() *platform.Identity {
	if p.Stamp == nil {
		return nil
	}
	id := p.Stamp.Identity
	return &id
}

// sighting is what was read of a lock file, to tell later whether the file
// at the path is still the same one.
type sighting struct {
	content []byte
	id      lockfs.FileID
	size    int64
	mtime   time.Time
}

func (a sighting) same(b sighting) bool {
	return a.id.Same(b.id) && a.size == b.size && a.mtime.Equal(b.mtime) && bytes.Equal(a.content, b.content)
}

// Look probes path and judges what it finds from here, this process's
// identity. It writes nothing. A directory at path is an error wrapping a
// *fs.PathError; so is a file this process may not read (EACCES, EPERM): it
// is neither held nor stale.
func Look(p *platform.Platform, here platform.Identity, path string) (Probe, error) {
	seen, readable, err := read(p.FS, path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return Probe{State: Absent}, nil
		}
		return Probe{}, err
	}
	pr := Probe{seen: seen}
	if readable {
		if s, err := ParseStamp(seen.content); err == nil {
			pr.Stamp = &s
			return judged(p, here, pr), nil
		}
	}
	pr.Reason = ReasonUnreadable
	if readable && len(bytes.TrimSpace(seen.content)) == 0 {
		pr.Reason = ReasonUnstamped
	}
	pr.Age = p.Time().Now().Sub(seen.mtime)
	pr.State = Held
	if pr.Age > UnstampedWindow {
		pr.State = Stale
	}
	return pr, nil
}

// judged sets pr's state from the judge's verdict on its stamp.
func judged(p *platform.Platform, here platform.Identity, pr Probe) Probe {
	j := platform.Judge(here, pr.Stamp.Identity, lookupOf(p))
	pr.Reason = j.Reason
	pr.State = Held
	if j.Verdict == platform.Dead {
		pr.State = Stale
	}
	return pr
}

func lookupOf(p *platform.Platform) func(int) (platform.PIDInfo, error) {
	if p.Process == nil {
		return func(int) (platform.PIDInfo, error) {
			return platform.PIDInfo{}, errors.New("stamplock: platform has no Process")
		}
	}
	return p.Process.Lookup
}

// read reads the file at path without following a symlink and without
// blocking. readable is false for a file that is not a regular file, is
// larger than MaxStampSize, or fails to read; its sighting then holds what
// Lstat says. A missing file is fs.ErrNotExist; a directory or a permission
// failure is an error.
func read(fsys lockfs.FS, path string) (seen sighting, readable bool, err error) {
	f, err := fsys.OpenNoFollow(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, fs.ErrPermission) {
			return sighting{}, false, err
		}
		// A symlink, a socket, or anything else that does not open.
		return lstatSighting(fsys, path)
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return lstatSighting(fsys, path)
	}
	if info.IsDir() {
		return sighting{}, false, &fs.PathError{Op: "open", Path: path, Err: lockfs.ErrIsDir}
	}
	seen = sighting{size: info.Size(), mtime: info.ModTime()}
	seen.id, _ = fsys.FileIDOf(f) // without an identity, size, time and bytes still tell files apart
	if !info.Mode().IsRegular() || info.Size() > MaxStampSize {
		return seen, false, nil
	}
	content, err := io.ReadAll(io.LimitReader(f, MaxStampSize+1))
	if err != nil {
		if errors.Is(err, fs.ErrPermission) {
			return sighting{}, false, err
		}
		return seen, false, nil
	}
	seen.content = content
	return seen, len(content) <= MaxStampSize, nil
}

// lstatSighting describes a path that could not be opened and read.
func lstatSighting(fsys lockfs.FS, path string) (sighting, bool, error) {
	info, _, err := fsys.LstatIfPossible(path)
	if err != nil {
		return sighting{}, false, err
	}
	if info.IsDir() {
		return sighting{}, false, &fs.PathError{Op: "open", Path: path, Err: lockfs.ErrIsDir}
	}
	id, _ := fsys.FileID(path)
	return sighting{id: id, size: info.Size(), mtime: info.ModTime()}, false, nil
}
