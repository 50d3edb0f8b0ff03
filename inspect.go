package proclock

import (
	"context"
	"time"

	"github.com/proclock/proclock/platform"
)

// State is what Inspect finds at a lock's path.
type State string

func (s State) String() string { return string(s) }

const (
	// StateAbsent: nothing at the path; the lock is free.
	StateAbsent State = "absent"
	// StateFree: the lock's file exists and nobody holds it.
	StateFree State = "free"
	// StateHeld: a holder has it (or, for a young unstamped lock file,
	// may have it).
	StateHeld State = "held"
	// StateStale: a lock file whose holder is gone; the next Acquire
	// reclaims it. Status.Reason says why.
	StateStale State = "stale"
	// StateInaccessible: this process may not read the lock's file.
	StateInaccessible State = "inaccessible"
	// StateForeign: the file at the path is not a lock file, which
	// proclock never changes; Acquire's error matches ErrNotLockFile.
	StateForeign State = "foreign"
)

// Status is Inspect's report on a lock.
type Status struct {
	Path  string `json:"path"`
	State State  `json:"state"`
	// Reason says why a lock is stale ("pid gone", "unstamped past 30
	// s", ...), inaccessible or foreign, or what is known of a holder
	// that is not ("a flock(2) lock").
	Reason string             `json:"reason,omitempty"`
	Holder *platform.Identity `json:"holder,omitempty"` // as recorded, when known
	// OtherPIDNamespace and OtherTimeNamespace are set when the holder,
	// of this host, is in another pid namespace (its file lock is never
	// reclaimed) or time namespace than this process, as far as both are
	// known (docs/design.md, "Time namespaces").
	OtherPIDNamespace  bool `json:"otherPidNamespace,omitempty"`
	OtherTimeNamespace bool `json:"otherTimeNamespace,omitempty"`
	// AcquiredAt is when the holder took the lock, when recorded; HeldFor
	// is how long ago that was, by the platform's clock.
	AcquiredAt time.Time     `json:"acquiredAt,omitzero"`
	HeldFor    time.Duration `json:"heldFor,omitempty"`
	HeldHere   bool          `json:"heldHere,omitempty"` // by an acquisition in this process
	Mechanism  Mechanism     `json:"mechanism"`

	cause error // what made the lock inaccessible or foreign
}

// IsHeld reports whether another process, or an acquisition in this one,
// holds the lock at path, writing nothing. The answer may be out of date
// by the time it arrives: only Acquire decides. ctx is looked at once.
func IsHeld(ctx context.Context, p *platform.Platform, path string) (bool, error) {
	st, err := inspect(ctx, p, path, false)
	if err == nil && (st.State == StateInaccessible || st.State == StateForeign) {
		// Neither held nor free: Acquire would fail the same way.
		err = &Error{Op: "inspect", Path: path, Err: st.cause}
	}
	return st.State == StateHeld, err
}

// Inspect reports the state of the lock at path, its holder and since when,
// and its mechanism, for people and tools, writing nothing. A stuck holder
// is for a watchdog to kill: HeldFor shows how long it has held.
func Inspect(ctx context.Context, p *platform.Platform, path string) (Status, error) {
	return inspect(ctx, p, path, true)
}

// inspect is Inspect; without detail it reads only what IsHeld needs.
// Its errors are *Error.
func inspect(ctx context.Context, p *platform.Platform, path string, detail bool) (st Status, err error) {
	defer func() {
		if err != nil {
			err = pathError("inspect", path, err)
		} else if detail {
			st.setNamespaces(selfIdentity(p))
		}
	}()
	if err := ctx.Err(); err != nil {
		return Status{Path: path}, err
	}
	t, err := unkeyedTarget(p, path)
	// With no turn to look up, the directory's stat for a key is spared.
	keyed := err == nil && !turns.empty()
	if keyed {
		err = t.setKey(p)
	}
	if err != nil {
		return Status{Path: path}, err
	}
	if keyed && turns.held(t.key) {
		// Never probed: a process never opens SQLite against its own
		// holder.
		st := t.mech.recorded()
		st.State, st.HeldHere = StateHeld, true
		if st.Holder == nil {
			st.Holder = selfIdentity(p)
		}
		return st, nil
	}
	st, err = t.mech.inspect(detail)
	if err == nil && !keyed && st.State == StateAbsent {
		if _, err := p.FS.DirID(t.dir); err != nil { // as a key would check it
			return Status{Path: path}, err
		}
	}
	return st, err
}

// setNamespaces tells whether the holder is in other namespaces of this
// host than here (nil: unknown).
func (st *Status) setNamespaces(here *platform.Identity) {
	h := st.Holder
	if h == nil || here == nil || h.Host != here.Host || (h.BootID != "" && here.BootID != "" && h.BootID != here.BootID) {
		return
	}
	differ := func(a, b uint64) bool { return a != 0 && b != 0 && a != b }
	st.OtherPIDNamespace = differ(h.PIDNamespace, here.PIDNamespace)
	st.OtherTimeNamespace = differ(h.TimeNamespace, here.TimeNamespace)
}

// setAcquired records when the holder took the lock, if known.
func (st *Status) setAcquired(at, now time.Time) {
	if at.IsZero() {
		return
	}
	st.AcquiredAt = at
	// A time ahead of this clock is no time held yet.
	st.HeldFor = max(now.Sub(at), 0)
}
