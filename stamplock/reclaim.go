package stamplock

import (
	"crypto/rand"
	"errors"
	"fmt"
	"io/fs"

	"github.com/proclock/proclock/platform"
)

// GuardSuffix names the guard file of a lock's reclaim: one reclaimer at a
// time holds "<path>.stale", itself a stamped lock file.
const GuardSuffix = ".stale"

// maxGuardDepth bounds the nesting of guards (a stale guard is reclaimed
// under its own guard). The deepest guard is reclaimed without one, so a
// string of crashed reclaimers never wedges a lock.
const maxGuardDepth = 3

// reclaim removes the stale file that pr saw at path, so that the caller
// can create it again. Under the guard it checks that the file is still the
// one probed, renames it to a private name, checks again, and removes it,
// or links it back if it changed in between. A reclaim that finds the file
// changed or gone returns nil: the caller looks again.
func reclaim(p *platform.Platform, here platform.Identity, path string, pr Probe, depth int) error {
	if depth < maxGuardDepth {
		guard, err := acquire(p, here, path+GuardSuffix, depth+1)
		var busy *Busy
		if errors.As(err, &busy) {
			return &Busy{Path: path, Probe: Probe{State: Held, Reason: ReasonReclaiming}}
		}
		if err != nil {
			return err
		}
		defer guard.Release()
	}
	return setAside(p, here, path, pr.seen)
}

// setAside removes the file at path if it is still the one seen.
func setAside(p *platform.Platform, here platform.Identity, path string, seen sighting) error {
	now, _, err := read(p.FS, path)
	if err != nil {
		return ignoreNotExist(err)
	}
	if !now.same(seen) {
		return nil
	}
	private := fmt.Sprintf("%s.stale-%d-%s", path, here.PID, rand.Text())
	if err := p.FS.Rename(path, private); err != nil {
		return ignoreNotExist(err)
	}
	moved, _, err := read(p.FS, private)
	if err == nil && moved.same(seen) {
		return p.FS.Remove(private)
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

func ignoreNotExist(err error) error {
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return err
}
