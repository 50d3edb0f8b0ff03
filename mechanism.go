package proclock

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"

	"github.com/proclock/proclock/platform"
	"github.com/proclock/proclock/sqlitelock"
	"github.com/proclock/proclock/stamplock"
)

// mechanism is one way of holding a lock at one path.
type mechanism interface {
	kind() Mechanism
	// ready fails when the mechanism cannot work at all (the file
	// mechanism without this process's identity).
	ready() error
	// attempt makes one attempt; a held lock is a *HeldError.
	attempt(ctx context.Context, first bool, opts Options) (*Lock, error)
	// inspect reports the lock's state, writing nothing; with detail,
	// also who holds it, where that needs more reading.
	inspect(detail bool) (Status, error)
	// recorded reports what the lock's files say of its holder, without
	// probing the lock: for a lock held in this process.
	recorded() Status
	// watched names the files, in the lock's directory, whose change may
	// free the lock: what a waiter's wake-up source watches.
	watched() []string
}

// mechanismFor chooses: SQLite where the platform has it, else the file.
func mechanismFor(p *platform.Platform, path string) mechanism {
	if p.SQLite != nil {
		return &sqliteMechanism{p: p, path: path}
	}
	return &fileMechanism{p: p, path: path}
}

// sqliteMechanism holds a lock with an exclusive SQLite lock (package
// sqlitelock).
type sqliteMechanism struct {
	p    *platform.Platform
	path string
}

func (m *sqliteMechanism) kind() Mechanism { return MechanismSQLite }

// ready: the SQLite mechanism works without this process's identity; the
// lock's holder is then unknown.
func (m *sqliteMechanism) ready() error { return nil }

func (m *sqliteMechanism) attempt(ctx context.Context, first bool, opts Options) (*Lock, error) {
	self := selfIdentity(m.p)
	sl, err := sqlitelock.Acquire(m.p, m.path, sqlitelock.Attempt{First: first, Self: self, RemoveOnRelease: opts.RemoveOnRelease, Conns: connPool{m.p.SQLite}, Ctx: ctx})
	if busy, ok := errors.AsType[*sqlitelock.Busy](err); ok {
		return nil, &HeldError{Path: m.path, Holder: busy.Holder()}
	}
	if err != nil {
		return nil, fmt.Errorf("proclock: acquire %s: %w", m.path, err)
	}
	return &Lock{path: m.path, mech: MechanismSQLite, holder: self, release: sl.Release}, nil
}

// watched: .holder, which its holder removes just before it lets go, and
// the database, which it removes too with RemoveOnRelease.
func (m *sqliteMechanism) watched() []string {
	base := filepath.Base(m.path)
	return []string{base, base + sqlitelock.HolderSuffix}
}

func (m *sqliteMechanism) recorded() Status {
	st := Status{Path: m.path, Mechanism: MechanismSQLite}
	if r := sqlitelock.ReadHolder(m.p.FS, m.path); r != nil {
		st.Holder = &r.Identity
		st.setAcquired(r.AcquiredAt, m.p.Time().Now())
	}
	return st
}

func (m *sqliteMechanism) inspect(detail bool) (Status, error) {
	st := Status{Path: m.path, Mechanism: MechanismSQLite}
	state, err := sqlitelock.Probe(m.p, connPool{m.p.SQLite}, m.path)
	if errors.Is(err, fs.ErrPermission) {
		st.State, st.Reason, st.cause = StateInaccessible, err.Error(), err
		return st, nil
	}
	if err != nil {
		return st, fmt.Errorf("proclock: inspect %s: %w", m.path, err)
	}
	switch state {
	case sqlitelock.Absent:
		st.State = StateAbsent
	case sqlitelock.Free:
		st.State = StateFree
	case sqlitelock.Held:
		if detail {
			st = m.recorded()
		}
		st.State = StateHeld
	}
	return st, nil
}

// fileMechanism holds a lock with a stamped lock file (package stamplock).
type fileMechanism struct {
	p    *platform.Platform
	path string
}

func (m *fileMechanism) kind() Mechanism { return MechanismFile }

func (m *fileMechanism) ready() error {
	_, err := m.self()
	return err
}

// self is this process's identity, which the file mechanism needs to judge
// holders and stamp its own files.
func (m *fileMechanism) self() (platform.Identity, error) {
	if m.p.Process == nil {
		return platform.Identity{}, fmt.Errorf("proclock: file lock %s: %w", m.path, errNoProcess)
	}
	id, err := m.p.Process.Self()
	if err == nil && id.PID <= 0 {
		// A stamp without a pid could not be judged: others would take
		// it for junk and reclaim it after 30 s, from a live holder.
		err = fmt.Errorf("%w: pid %d", errNoPID, id.PID)
	}
	if err != nil {
		return platform.Identity{}, fmt.Errorf("proclock: file lock %s needs this process's identity: %w", m.path, err)
	}
	return id, nil
}

// errNoPID says a platform's identity of this process has no usable pid.
var errNoPID = errors.New("identity has no process id")

// errNoProcess says the platform has no Process.
var errNoProcess = errors.New("platform has no Process")

func (m *fileMechanism) attempt(ctx context.Context, first bool, opts Options) (*Lock, error) {
	here, err := m.self()
	if err != nil {
		return nil, err
	}
	sl, err := stamplock.Acquire(m.p, here, m.path)
	if busy, ok := errors.AsType[*stamplock.Busy](err); ok {
		return nil, &HeldError{Path: m.path, Holder: busy.Probe.Holder()}
	}
	if err != nil {
		return nil, fmt.Errorf("proclock: acquire %s: %w", m.path, err)
	}
	return &Lock{path: m.path, mech: MechanismFile, holder: &here, release: sl.Release}, nil
}

// watched: the lock file, which its holder removes as it lets go, and the
// guard of a reclaim, which a reclaimer removes when done.
func (m *fileMechanism) watched() []string {
	base := filepath.Base(m.path)
	return []string{base, base + stamplock.GuardSuffix}
}

func (m *fileMechanism) recorded() Status {
	st, err := m.inspect(true)
	if err != nil {
		return Status{Path: m.path, Mechanism: MechanismFile}
	}
	return st
}

func (m *fileMechanism) inspect(bool) (Status, error) {
	st := Status{Path: m.path, Mechanism: MechanismFile}
	here, err := m.self()
	if err != nil {
		return st, err
	}
	pr, err := stamplock.Look(m.p, here, m.path)
	if errors.Is(err, fs.ErrPermission) {
		st.State, st.Reason, st.cause = StateInaccessible, err.Error(), err
		return st, nil
	}
	if err != nil {
		return st, fmt.Errorf("proclock: inspect %s: %w", m.path, err)
	}
	st.Holder = pr.Holder()
	if pr.Stamp != nil {
		st.setAcquired(pr.Stamp.AcquiredAt, m.p.Time().Now())
	}
	switch pr.State {
	case stamplock.Absent:
		st.State = StateAbsent
	case stamplock.Held:
		st.State = StateHeld
	case stamplock.Stale:
		st.State = StateStale
		st.Reason = staleReason(pr.Reason)
	}
	return st, nil
}

// staleReason words why a lock file is stale, as Inspect reports it.
func staleReason(r platform.Reason) string {
	switch r {
	case stamplock.ReasonUnstamped:
		return "unstamped past 30 s"
	case stamplock.ReasonUnreadable:
		return "unreadable past 30 s"
	}
	return string(r)
}
