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
// mark counts as held: long enough for a live holder to write its stamp
// after creating the file. Past it (strictly), the file is stale. A mark
// not yet written keeps others out as long (lockrec.MarkWindow): one window.
const UnstampedWindow = lockrec.MarkWindow

// Reasons a probe gives beside the judge's (platform.Reason).
const (
	// ReasonUnstamped: an empty file or a SQLite lock without a mark.
	ReasonUnstamped platform.Reason = "unstamped"
	// ReasonUnreadable: a torn stamp.
	ReasonUnreadable platform.Reason = "unreadable"
	// reasonMarked: a SQLite holder's live (or unjudgeable) mark.
	reasonMarked platform.Reason = "marked"
	// ReasonFree: a SQLite lock's database, without a live mark: free,
	// to be converted at once.
	ReasonFree platform.Reason = "free"
	// ReasonLocked: a file that would be stale or free, on which another
	// holds a SQLite lock (lockrec.KernelLocked) or a flock(2) lock that
	// no mark beside this name tells of: a connection outside proclock,
	// or a holder through another name of the file (a hard link). Held,
	// holder unknown.
	ReasonLocked platform.Reason = "locked"
)

// Probe is what a look at a lock's path found, and how it was judged.
type Probe struct {
	// State is lockrec.StateAbsent (no file at the path), StateHeld (a
	// live holder, one that cannot be judged from here, or a file too
	// young to judge) or StateStale (the holder is dead for certain, the
	// file went unstamped or torn for longer than UnstampedWindow, or it
	// is a SQLite lock's database without a live mark: ReasonFree).
	State lockrec.State
	// Reason says why the file is held or stale: the judge's reason for
	// a stamp, or one of this package's reasons.
	Reason platform.Reason
	// Kind is what the lock file holds.
	Kind lockrec.Kind
	// Stamp is the file's stamp; nil when it has none.
	Stamp *lockrec.Record
	// Mark is the lock's mark (a SQLite holder's record), when it keeps
	// others out: the lock is then held by its holder, whatever the file.
	Mark *lockrec.Mark
	// Age is how long ago the file was last written.
	Age time.Duration
	// StampDead is set when a live mark holds the lock, and the file
	// holds a stamp whose holder is dead, or a torn one past
	// UnstampedWindow: Clear may empty it.
	StampDead bool
	// LockedBy says what kind of lock on the file holds it, when Reason
	// is ReasonLocked (lockrec.LockedReason).
	LockedBy string

	seen lockrec.Sighting
}

// Holder is the recorded identity of the holder, or nil when unknown.
func (p Probe) Holder() *platform.Identity {
	if p.Mark != nil {
		return p.Mark.Holder()
	}
	return p.Stamp.Holder()
}

// Look probes path and judges what it finds from here, this process's
// identity, as docs/protocol.md says: the file first, then the mark. It
// writes nothing. A directory at path is an error wrapping a *fs.PathError;
// so is a file this process may not read (EACCES, EPERM): it is neither
// held nor stale; and so is a file that is not a lock file (matching
// lockrec.ErrNotLockFile).
func Look(p *platform.Platform, here platform.Identity, path string) (Probe, error) {
	return look(p, here, path, false)
}

// LookHeld is Look for a caller that asks only whether the lock is held
// (IsHeld): a stamp judged live holds the lock whatever the mark says (a
// live mark's holder holds it then, or is backing off from the stamp), so
// the mark is not read then, and the Probe has no Mark. Otherwise it is
// Look.
func LookHeld(p *platform.Platform, here platform.Identity, path string) (Probe, error) {
	return look(p, here, path, true)
}

// look is Look; with quick it is LookHeld.
func look(p *platform.Platform, here platform.Identity, path string, quick bool) (Probe, error) {
	seen, err := lockrec.Read(p.FS, path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return Probe{State: lockrec.StateAbsent}, nil
		}
		return Probe{}, err
	}
	if seen.Kind == lockrec.Foreign {
		return Probe{}, &fs.PathError{Op: "lock", Path: path, Err: lockrec.ErrNotLockFile}
	}
	pr := Probe{seen: seen, Kind: seen.Kind, Age: lockrec.Age(p, seen.ID, path, seen.Mtime)}
	var stamp *Probe // the stamp judged, once it is
	if quick && seen.Kind == lockrec.Stamp {
		pr.Stamp = seen.Stamp
		j := judged(p, here, pr)
		if j.State == lockrec.StateHeld {
			return j, nil
		}
		pr.Stamp, stamp = nil, &j
	}
	judgedStamp := func() Probe {
		if stamp == nil {
			j := judged(p, here, pr)
			stamp = &j
		}
		return *stamp
	}
	m := lockrec.ReadMark(p.FS, path)
	if m.Err != nil {
		return Probe{}, m.Err
	}
	if m.Live(p, &here) {
		pr.State, pr.Reason, pr.Mark = lockrec.StateHeld, reasonMarked, &m
		switch seen.Kind {
		case lockrec.Stamp:
			// A stamp in a file a SQLite process holds: its writer
			// backed off, or died before it could. A dead one's is
			// cleared (Clear), whoever holds the file.
			pr.Stamp = seen.Stamp
			pr.StampDead = judgedStamp().State == lockrec.StateStale
		case lockrec.Torn:
			// So is a torn one past the window: its writer is gone.
			pr.StampDead = pr.Age > UnstampedWindow
		}
		return pr, nil
	}
	if seen.Kind == lockrec.Stamp {
		pr.Stamp = seen.Stamp
		return lockedLook(p, path, judgedStamp())
	}
	return lockedLook(p, path, unstamped(pr))
}

// unstamped judges pr, a lock file with no stamp (empty, torn or the
// empty database) and no live mark beside it.
func unstamped(pr Probe) Probe {
	if pr.Kind == lockrec.SQLite {
		// Only SQLite processes write a database: no stamp is on its
		// way, and without a live mark nobody holds it, unless a SQLite
		// lock on it says so.
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

// lockedLook is pr, or, when pr finds the file at path stale or free, held
// (ReasonLocked) if the kernel says another holds a lock on it that no
// mark tells of: the file mechanism never takes a file that a SQLite
// connection has locked, wherever the platform can see it
// (docs/protocol.md, "The kernel's locks"). Only the stale path pays for
// the look.
func lockedLook(p *platform.Platform, path string, pr Probe) (Probe, error) {
	if pr.State != lockrec.StateStale {
		return pr, nil
	}
	f, err := fsx.OpenLook(p.FS, path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return pr, nil // gone since: the next look tells
		}
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
	pr.Reason = j.Reason
	pr.State = lockrec.StateHeld
	switch {
	case j.Verdict == platform.Dead:
		pr.State = lockrec.StateStale
	case leftHere(here, pr.Stamp):
		pr.State, pr.Reason = lockrec.StateStale, ReasonLeftHere
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
