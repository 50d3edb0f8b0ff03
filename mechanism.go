package proclock

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"time"

	"github.com/proclock/proclock/internal/lockrec"
	"github.com/proclock/proclock/internal/sqlitelock"
	"github.com/proclock/proclock/internal/stamplock"
	"github.com/proclock/proclock/platform"
)

// mechanism is one way of holding a lock at one path; both share the
// lock's files and exclude each other (docs/protocol.md).
type mechanism interface {
	// attempt makes one attempt; a held lock is a *HeldError. The first
	// rides out a lock that is just changing hands.
	attempt(ctx context.Context, first bool, opts Options) (*Lock, error)
	// inspect reports the lock's state, writing nothing; with detail,
	// also what needs more reading.
	inspect(detail bool) (Status, error)
	// recorded is what the lock's files say of a holder in this process.
	recorded() Status
}

// mechanismFor chooses: SQLite where the platform has it, else the file.
func mechanismFor(p *platform.Platform, path string) mechanism {
	if p.SQLite != nil {
		return &sqliteMechanism{p: p, path: path}
	}
	return &fileMechanism{p: p, path: path}
}

// sqliteMechanism holds a lock with SQLite's lock (package sqlitelock).
type sqliteMechanism struct {
	p       *platform.Platform
	path    string
	noFlock bool // on a network filesystem (sqlitelock.Attempt.NoFlock)
}

// maxStampRounds bounds how often one attempt clears a dead holder's stamp
// and tries again.
const maxStampRounds = 3

func (m *sqliteMechanism) attempt(ctx context.Context, first bool, opts Options) (*Lock, error) {
	self := selfIdentity(m.p)
	a := sqlitelock.Attempt{Self: self, RemoveOnRelease: opts.RemoveOnRelease, Conns: idleConns.For(m.p.SQLite), NoFlock: m.noFlock}
	switch {
	case opts.Wait:
		a.Retry = sqlitelock.RetryQueue
	case first:
		a.Retry = sqlitelock.RetryBusy
	}
	if self != nil {
		a.Guard = func(ctx context.Context, path string) (interface{ Release() error }, error) {
			return stamplock.Guard(ctx, m.p, *self, path)
		}
	}
	for range maxStampRounds {
		sl, err := sqlitelock.Acquire(ctx, m.p, m.path, a)
		if err == nil {
			return &Lock{path: m.path, mech: MechanismSQLite, holder: self, release: sl.Release, file: sl.KernelFile(), p: m.p, check: sl}, nil
		}
		if !errors.Is(err, sqlitelock.ErrStamped) {
			return nil, rootHeld(err)
		}
		// A file-mechanism holder's stamp: held, or cleared if stale.
		if err := m.clearStamp(ctx, self); err != nil {
			return nil, rootHeld(err)
		}
		if !opts.Wait {
			a.Retry = sqlitelock.RetryNone
		}
	}
	return nil, rootHeld(lockrec.HeldBy(m.path, stampOf(m.p, m.path)))
}

// clearStamp judges a stamp found at the path: held (lockrec's, as the
// mechanisms say it) when its holder lives or cannot be judged; nil once a
// dead holder's stamp is cleared.
func (m *sqliteMechanism) clearStamp(ctx context.Context, self *platform.Identity) error {
	if self == nil {
		return lockrec.HeldBy(m.path, stampOf(m.p, m.path))
	}
	pr, err := stamplock.Look(m.p, *self, m.path, false)
	switch {
	case err != nil:
		return err
	case State(pr.State) == StateHeld && !pr.StampDead:
		return lockrec.HeldBy(m.path, recordOf(pr))
	case pr.Reason == stamplock.ReasonFree:
		return nil // let go of since: nothing to clear
	case State(pr.State) == StateStale || pr.StampDead:
		// Beside a live mark, once the dead stamp is cleared the
		// kernel's lock tells whether the mark's writer still holds.
		return stamplock.Clear(ctx, m.p, *self, m.path, pr)
	}
	return nil
}

// rootHeld is err with a mechanism's held error (lockrec's) made a
// *HeldError; other errors pass as they are.
func rootHeld(err error) error {
	if pe, ok := errors.AsType[*sqlitelock.ParkedError](err); ok {
		pe.Held = rootHeld(pe.Held) // its wait is still queued: turns.park
		return pe
	}
	if h, ok := errors.AsType[*lockrec.HeldError](err); ok {
		return &HeldError{Path: h.Path, Holder: h.Holder, Reason: h.Reason, Since: h.Since}
	}
	return err
}

// stampOf is the stamp at path, unjudged; nil when there is none.
func stampOf(p *platform.Platform, path string) *lockrec.Record {
	seen, err := lockrec.Read(p.FS, path)
	if err != nil || seen.Kind != lockrec.Stamp {
		return nil
	}
	return seen.Stamp
}

// recordOf is the record by which a file-mechanism look names the holder:
// the mark's when it keeps others out, else the stamp.
func recordOf(pr stamplock.Probe) *lockrec.Record {
	if pr.Mark != nil {
		return pr.Mark.Record
	}
	return pr.Stamp
}

func (m *sqliteMechanism) recorded() Status {
	st := Status{Path: m.path, Mechanism: MechanismSQLite}
	mark := lockrec.ReadMark(m.p.FS, m.path)
	if r := mark.Record; r.Known() {
		st.Holder = &r.Identity
		st.setAcquired(r.AcquiredAt, m.p.Time().Now())
		if id, err := m.p.FS.FileID(m.path); r.LockIno != 0 && (err != nil || !mark.Names(id)) {
			st.Reason = reasonFileGone // as heldByMark says it
		}
	}
	return st
}

func (m *sqliteMechanism) inspect(detail bool) (Status, error) {
	st := Status{Path: m.path, Mechanism: MechanismSQLite}
	found, why, err := sqlitelock.Probe(m.p, idleConns.For(m.p.SQLite), m.path)
	state := State(found)
	switch {
	case errors.Is(err, sqlitelock.ErrStamped):
		// The file mechanism's lock: judged as it judges it.
		self := selfIdentity(m.p)
		if self == nil {
			st.State, st.Mechanism, st.Holder = StateHeld, MechanismFile, stampOf(m.p, m.path).Holder()
			return st, nil
		}
		return inspectFile(m.p, *self, m.path, detail)
	case err != nil:
		return failedInspect(st, err)
	}
	if held, ok := heldByMark(m.p, m.path, state); ok {
		return held, nil
	}
	switch {
	case state == StateHeld && why == "" && detail:
		st = m.recorded()
		why = st.Reason
	case state != StateHeld && detail:
		// What keeps Acquire out of a free lock: a user's file at the
		// mark's name, or one at the guard's, under which Acquire
		// removes a dead mark (docs/protocol.md). Not for IsHeld.
		mark := lockrec.ReadMark(m.p.FS, m.path)
		if mark.Foreign() {
			return failedInspect(st, &fs.PathError{Op: "inspect", Path: lockrec.MarkPath(m.path), Err: lockrec.ErrNotLockFile})
		}
		if self := selfIdentity(m.p); self != nil && mark.Dead(m.p, self) {
			if err := stamplock.GuardFault(m.p, *self, m.path); err != nil {
				return failedInspect(st, err)
			}
		}
	}
	st.State, st.Reason = state, why
	return st, nil
}

// failedInspect is the status, or the error, of an inspection that failed
// with err.
func failedInspect(st Status, err error) (Status, error) {
	switch {
	case errors.Is(err, fs.ErrPermission):
		st.State = StateInaccessible
	case errors.Is(err, lockrec.ErrNotLockFile):
		st.State = StateForeign
	case errors.Is(err, ErrHeld):
		// The guard of a stale lock is held: Acquire is kept out.
		st.State, st.Holder, st.AcquiredAt, st.HeldFor = StateHeld, nil, time.Time{}, 0
		return st, nil
	default:
		return st, err
	}
	st.Reason, st.cause = plainCause(err, st.Path), err
	return st, nil
}

// fileMechanism holds a lock with a stamped lock file (package stamplock).
type fileMechanism struct {
	p    *platform.Platform
	path string
	seen bool // the last attempt found it held (stamplock.Acquire's seen)
}

// self is this process's identity, or why there is none: the file
// mechanism cannot work without it.
func self(p *platform.Platform) (platform.Identity, error) {
	if p.Process == nil {
		return platform.Identity{}, fmt.Errorf("%w: platform has no Process", errNoIdentity)
	}
	id, err := p.Process.Self()
	if err == nil && id.PID <= 0 {
		// Others would take a stamp without a pid for junk.
		err = fmt.Errorf("identity has no process id: pid %d", id.PID)
	}
	if err != nil {
		return platform.Identity{}, fmt.Errorf("%w: %w", errNoIdentity, err)
	}
	return id, nil
}

// errNoIdentity is matched by the error of the file mechanism without this
// process's identity.
var errNoIdentity = errors.New("the file mechanism needs this process's identity")

func (m *fileMechanism) attempt(ctx context.Context, first bool, opts Options) (*Lock, error) {
	here, err := self(m.p)
	if err != nil {
		return nil, err
	}
	sl, err := stamplock.Acquire(ctx, m.p, here, m.path, m.seen)
	err = rootHeld(err)
	m.seen = errors.Is(err, ErrHeld)
	if err != nil {
		return nil, err
	}
	return &Lock{path: m.path, mech: MechanismFile, holder: &here, release: sl.Release, file: sl.File(), p: m.p, check: sl}, nil
}

func (m *fileMechanism) recorded() Status {
	st, err := m.inspect(true)
	if err != nil {
		return Status{Path: m.path, Mechanism: MechanismFile}
	}
	return st
}

func (m *fileMechanism) inspect(detail bool) (Status, error) {
	here, err := self(m.p)
	if err != nil {
		return Status{Path: m.path, Mechanism: MechanismFile}, err
	}
	return inspectFile(m.p, here, m.path, detail)
}

// inspectFile reports on the lock at path as the file mechanism judges it.
func inspectFile(p *platform.Platform, here platform.Identity, path string, detail bool) (Status, error) {
	st := Status{Path: path, Mechanism: MechanismFile}
	pr, err := stamplock.Look(p, here, path, !detail) // IsHeld: a live stamp is enough
	if err != nil {
		return failedInspect(st, err)
	}
	state := State(pr.State)
	if held, ok := heldByMark(p, path, state); ok {
		return held, nil
	}
	st.Holder = pr.Holder()
	if state != StateAbsent {
		if r := recordOf(pr); r != nil {
			st.setAcquired(r.AcquiredAt, p.Time().Now())
		}
		if pr.Mark != nil || (pr.Stamp == nil && pr.Kind == lockrec.SQLite) {
			st.Mechanism = MechanismSQLite // an empty file could be either's
		}
	}
	if state == StateStale && detail {
		// A user's file at the guard's name keeps Acquire's convert out.
		if err := stamplock.GuardFault(p, here, path); err != nil {
			return failedInspect(st, err)
		}
	}
	st.State, st.Reason = fileState(state, pr)
	return st, nil
}

// fileState is the state and reason Inspect gives for a file-mechanism
// look pr that judged the lock state.
func fileState(state State, pr stamplock.Probe) (State, string) {
	switch {
	case state == StateStale && pr.Reason == stamplock.ReasonFree:
		return StateFree, ""
	case state == StateStale && pr.Reason == stamplock.ReasonUnstamped:
		return state, "unstamped past 30 s"
	case state == StateStale && pr.Reason == stamplock.ReasonUnreadable:
		return state, "unreadable past 30 s"
	case state == StateStale:
		return state, string(pr.Reason)
	case pr.Reason == stamplock.ReasonLocked:
		return state, pr.LockedBy
	}
	return state, ""
}
