package stamplock

import (
	"errors"
	"io/fs"
	"time"

	"github.com/proclock/proclock/internal/fsx"
	"github.com/proclock/proclock/internal/lockrec"
	"github.com/proclock/proclock/platform"
)

// UnstampedWindow is how long an empty or torn lock file without a live
// mark counts as held: its writer may be between creating and stamping it.
const UnstampedWindow = lockrec.MarkWindow

// Reasons a probe gives beside the judge's.
const (
	ReasonUnstamped  platform.Reason = "unstamped"  // empty, without a mark
	ReasonUnreadable platform.Reason = "unreadable" // a torn stamp
	reasonMarked     platform.Reason = "marked"     // a live (or unjudgeable) mark
	// ReasonFree: the empty database without a live mark: free.
	ReasonFree platform.Reason = "free"
	// ReasonLocked: a file that would be stale or free, which another
	// holds a SQLite or flock(2) lock on (lockrec.LockedReason) that no
	// mark beside this name tells of. Held, holder unknown.
	ReasonLocked platform.Reason = "locked"
)

// Probe is what a look at a lock's path found, and how it was judged.
type Probe struct {
	// State is absent, held (a live holder, one that cannot be judged, a
	// file too young to judge) or stale (to convert).
	State  lockrec.State
	Reason platform.Reason // the judge's for a stamp, or this package's
	Kind   lockrec.Kind
	Stamp  *lockrec.Record // nil when the file has none
	// Mark is the lock's mark when it keeps others out: the lock is its
	// holder's, whatever the file.
	Mark *lockrec.Mark
	Age  time.Duration // since the file was last written
	// StampDead: beside a live mark, the file holds a dead holder's stamp,
	// or a torn one past UnstampedWindow, for Clear to empty.
	StampDead bool
	LockedBy  string // what lock holds the file, for ReasonLocked

	seen lockrec.Sighting
}

// Holder is the recorded identity of the holder, or nil when unknown: a
// kernel's lock holds what a stamp, dead, would not (ReasonLocked).
func (p Probe) Holder() *platform.Identity {
	switch {
	case p.Mark != nil:
		return p.Mark.Holder()
	case p.Reason == ReasonLocked:
		return nil
	}
	return p.Stamp.Holder()
}

// Look judges from here what is at path, the file first, then the mark,
// writing nothing (docs/protocol.md). A directory, an unreadable file and
// no lock file (lockrec.ErrNotLockFile) are errors. quick is for IsHeld: a
// stamp judged live holds the lock whatever the mark says, so the mark is
// then not read.
func Look(p *platform.Platform, here platform.Identity, path string, quick bool) (Probe, error) {
	seen, err := lockrec.Read(p.FS, path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return Probe{State: lockrec.StateAbsent}, nil
	case err != nil:
		return Probe{}, err
	case seen.Kind == lockrec.Foreign:
		return Probe{}, &fs.PathError{Op: "lock", Path: path, Err: lockrec.ErrNotLockFile}
	}
	pr := Probe{seen: seen, Kind: seen.Kind, Stamp: seen.Stamp, Age: lockrec.Age(p, seen.ID, path, seen.Mtime)}
	var stamp *Probe // the stamp judged, once it is
	judgedStamp := func() Probe {
		if stamp == nil {
			j := judged(p, here, pr)
			stamp = &j
		}
		return *stamp
	}
	if quick && seen.Kind == lockrec.Stamp && judgedStamp().State == lockrec.StateHeld {
		return *stamp, nil
	}
	m := lockrec.ReadMark(p.FS, path)
	if m.Err != nil {
		return Probe{}, m.Err
	}
	if m.Live(p, &here) {
		marked := pr
		marked.State, marked.Reason, marked.Mark = lockrec.StateHeld, reasonMarked, &m
		switch seen.Kind {
		case lockrec.Stamp:
			// A dead writer's stamp is cleared, whoever holds the file.
			marked.StampDead = judgedStamp().State == lockrec.StateStale
		case lockrec.Torn:
			marked.StampDead = pr.Age > UnstampedWindow
		}
		return marked, nil
	}
	if seen.Kind == lockrec.Stamp {
		return lockedLook(p, path, judgedStamp())
	}
	return lockedLook(p, path, unstamped(pr))
}

// unstamped judges pr, a lock file with no stamp (empty, torn or the
// empty database) and no live mark beside it.
func unstamped(pr Probe) Probe {
	if pr.Kind == lockrec.SQLite {
		// Only SQLite processes write it: no stamp is on its way.
		pr.State, pr.Reason = lockrec.StateStale, ReasonFree
		return pr
	}
	pr.Reason = ReasonUnstamped
	if pr.Kind == lockrec.Torn {
		pr.Reason = ReasonUnreadable
	}
	pr.State = lockrec.StateHeld
	if pr.Age > UnstampedWindow {
		pr.State = lockrec.StateStale
	}
	return pr
}

// lockedLook is pr, or held (ReasonLocked) when pr is stale and another
// holds a lock on the file (docs/protocol.md, "The kernel's locks").
func lockedLook(p *platform.Platform, path string, pr Probe) (Probe, error) {
	if pr.State != lockrec.StateStale {
		return pr, nil
	}
	f, err := fsx.OpenLook(p.FS, path)
	if errors.Is(err, fs.ErrNotExist) {
		return pr, nil // gone since: the next look tells
	} else if err != nil {
		return Probe{}, err
	}
	defer f.Close()
	if id, err := p.FS.FileIDOf(f); err == nil && !id.SameOpen(pr.seen.ID) {
		return pr, nil // another file since: the next look tells
	}
	why, err := lockrec.LockedReason(p.FS, f)
	if err != nil {
		return Probe{}, err
	}
	if why != "" {
		pr.State, pr.Reason, pr.LockedBy = lockrec.StateHeld, ReasonLocked, why
	}
	return pr, nil
}

// judged sets pr's state from the judge's verdict on its stamp.
func judged(p *platform.Platform, here platform.Identity, pr Probe) Probe {
	j := platform.Judge(here, pr.Stamp.Identity, lookupOf(p))
	pr.State, pr.Reason = lockrec.StateHeld, j.Reason
	switch {
	case j.Verdict == platform.Dead:
		pr.State = lockrec.StateStale
	case leftHere(here, pr.Stamp):
		pr.State, pr.Reason = lockrec.StateStale, ReasonLeftHere
	}
	return pr
}

// lookupOf is p's Lookup; without a Process, every lookup fails.
func lookupOf(p *platform.Platform) func(int) (platform.PIDInfo, error) {
	if p.Process == nil {
		return func(int) (platform.PIDInfo, error) {
			return platform.PIDInfo{}, errors.New("stamplock: platform has no Process")
		}
	}
	return p.Process.Lookup
}
