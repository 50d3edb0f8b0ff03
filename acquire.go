package proclock

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"reflect"
	"strings"
	"sync"

	"github.com/proclock/proclock/internal/fserr"
	"github.com/proclock/proclock/internal/fsx"
	"github.com/proclock/proclock/internal/lockrec"
	"github.com/proclock/proclock/internal/sqlitelock"
	"github.com/proclock/proclock/lockfs"
	"github.com/proclock/proclock/platform"
)

// Mechanism names how a lock is held.
type Mechanism string

const (
	// MechanismSQLite: an exclusive SQLite lock, where the platform has
	// SQLite.
	MechanismSQLite Mechanism = "sqlite"
	// MechanismFile: a lock file stamped with its holder's identity.
	MechanismFile Mechanism = "file"
)

// Options tune Acquire.
type Options struct {
	// Wait makes Acquire wait for the holder to let go, until ctx ends.
	Wait bool
	// RemoveOnRelease removes the SQLite lock's database file on
	// Release (the file mechanism always removes its lock file).
	RemoveOnRelease bool
	// AllowNetworkFS allows a lock on a network filesystem, where locks
	// are not reliable (refused where the OS tells: linux, darwin).
	AllowNetworkFS bool
}

// Lock is a held lock. Release it when done; a process that exits or
// crashes lets go of a SQLite lock at once, and its lock file becomes
// reclaimable. A Lock that is dropped without Release stays held for the
// rest of the process's life: proclock keeps every held lock reachable, so
// the garbage collector never closes the file that holds it.
type Lock struct {
	path    string
	mech    Mechanism
	holder  *platform.Identity
	release func() error
	file    lockfs.File // holds the kernel locks, or is the stamp (internal/lockfile)
	key     turnKey
	terms   handoffTerms
	// p and check serve the watch for the lock's loss (lost.go).
	p         *platform.Platform
	check     checker
	watchOnce sync.Once
	watch     lossWatch

	mu       sync.Mutex
	left     bool // the turn is given up
	released bool // the mechanism let go
}

// Path returns the lock's path, as given to Acquire.
func (l *Lock) Path() string { return l.path }

// Holder returns the identity recorded for this holder; nil when this
// process's identity is unknown.
func (l *Lock) Holder() *platform.Identity { return l.holder }

// Mechanism returns how the lock is held.
func (l *Lock) Mechanism() Mechanism { return l.mech }

// Release lets go of the lock, or hands it still held to an acquisition of
// this process waiting on the same terms (docs/design.md, "Waiting"). Once
// it has succeeded, calling it again does nothing; one that failed (an
// *Error) may be retried.
func (l *Lock) Release() error {
	if err := turns.release(l); err != nil {
		return pathError("release", l.path, err)
	}
	return nil
}

// Acquire takes the lock at path for this process, through p. Without
// opts.Wait it returns a *HeldError (matching ErrHeld) at once when the lock
// is held, by another process or by another acquisition in this one; with
// it, it waits until the lock is free or ctx ends, and then returns an error
// matching ctx.Err(). That error matches ErrHeld and *HeldError too, naming
// the holder waited for: test ctx.Err() (or errors.Is(err,
// context.Canceled)) before errors.AsType[*HeldError], or a shutdown during
// the wait reads as "already running".
//
// The lock stays held until Release or the process's exit, even when the
// *Lock is dropped (see Lock).
//
// Bad input (an empty path, a directory, a missing parent directory, a
// path too long) gives an *Error and creates nothing.
func Acquire(ctx context.Context, p *platform.Platform, path string, opts Options) (_ *Lock, err error) {
	defer func() {
		if err != nil {
			err = pathError("acquire", path, err)
		}
	}()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	t, err := target(p, path)
	if err != nil {
		return nil, err
	}
	if m, ok := t.mech.(*fileMechanism); ok {
		if _, err := self(m.p); err != nil {
			return nil, err // it cannot work without this process's identity
		}
	}
	if err := t.refuseNetworkFS(p.FS); err != nil {
		if !opts.AllowNetworkFS {
			return nil, err
		}
		if m, ok := t.mech.(*sqliteMechanism); ok {
			m.noFlock = true
		}
	}
	terms := termsOf(p, opts)
	handed, err := turns.enter(ctx, t.key, opts.Wait, path, terms)
	if handed != nil {
		return handed, nil
	}
	if err != nil {
		return nil, turnRefused(err, p, t)
	}
	l, err := attemptUntil(ctx, p, t, opts)
	if pe, ok := errors.AsType[*sqlitelock.ParkedError](err); ok {
		turns.park(t.key, pe.Done)
		return nil, err
	}
	if err != nil {
		turns.leave(t.key)
		return nil, err
	}
	l.key, l.terms = t.key, terms
	turns.hold(t.key, l)
	return l, nil
}

// turnRefused is Acquire's error when the lock's turn in this process was
// not had (turns.enter's err): held by this process.
func turnRefused(err error, p *platform.Platform, t lockTarget) error {
	held := &HeldError{Path: t.path, Holder: selfIdentity(p)}
	if errors.Is(err, errTurnParked) {
		// Only a wait of this process is queued, behind this holder.
		held.Holder = t.mech.recorded().Holder
	}
	if errors.Is(err, errTurnTaken) || errors.Is(err, errTurnParked) {
		return held
	}
	// Gave up waiting behind an acquisition of this process.
	return fmt.Errorf("%w while waiting: %w", err, held)
}

// lockTarget is a lock's path resolved, and the mechanism that serves it.
type lockTarget struct {
	path string
	dir  string // the path's directory, as given
	key  turnKey
	mech mechanism
}

// target checks p and path and makes the lock's turn key.
func target(p *platform.Platform, path string) (lockTarget, error) {
	t, err := unkeyedTarget(p, path)
	if err == nil {
		err = t.setKey(p)
	}
	return t, err
}

// setKey makes t's turn key: the platform's FS (both mechanisms share its
// files, so they share its turns), the directory's identity (which every
// name of it shares), and the base name.
func (t *lockTarget) setKey(p *platform.Platform) error {
	dirID, err := p.FS.DirID(t.dir)
	t.key = turnKey{world: p.FS, dirDev: dirID.Dev, dirIno: dirID.Ino, base: filepath.Base(t.path)}
	return err
}

// unkeyedTarget is target without the key, and the stat it costs.
func unkeyedTarget(p *platform.Platform, path string) (lockTarget, error) {
	if p == nil || p.FS == nil {
		return lockTarget{}, errors.New("proclock: platform has no FS")
	}
	if err := fserr.CheckPath("acquire", path); err != nil {
		return lockTarget{}, err
	}
	if limits, ok := p.FS.(fsx.PathLimits); ok {
		pathMax, nameMax := limits.PathLimits()
		if err := lockrec.CheckLength(path, pathMax, nameMax); err != nil {
			return lockTarget{}, err
		}
	}
	base := filepath.Base(path)
	if base == "." || base == ".." || base == string(filepath.Separator) || path[len(path)-1] == filepath.Separator {
		return lockTarget{}, &fs.PathError{Op: "acquire", Path: path, Err: lockfs.ErrIsDir}
	}
	if strings.HasSuffix(base, lockrec.MarkSuffix) || strings.HasSuffix(base, lockrec.GuardSuffix) {
		// Another lock's mark or guard (docs/protocol.md, "Names").
		return lockTarget{}, &fs.PathError{Op: "acquire", Path: path, Err: ErrSidecarName}
	}
	if !reflect.TypeOf(p.FS).Comparable() {
		return lockTarget{}, fmt.Errorf("proclock: platform's FS is a %T, which cannot key turns; use a pointer", p.FS)
	}
	if p.SQLite != nil && !reflect.TypeOf(p.SQLite).Comparable() {
		return lockTarget{}, fmt.Errorf("proclock: platform's SQLite is a %T, which cannot key its connections; use a pointer", p.SQLite)
	}
	return lockTarget{path: path, dir: filepath.Dir(path), mech: mechanismFor(p, path)}, nil
}

// selfIdentity is this process's identity; nil when unknown or without a
// pid, which no reader could judge.
func selfIdentity(p *platform.Platform) *platform.Identity {
	id, err := self(p)
	if err != nil {
		return nil
	}
	return &id
}
