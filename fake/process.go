package fake

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/proclock/proclock/platform"
)

// ErrKilled is what a killed process's operations fail with, wrapped: its
// filesystem operations in a *fs.PathError (or *os.LinkError), its sleeps
// and lookups in an error naming its pid.
var ErrKilled = errors.New("fake: process killed")

// Process is a fake process: a pid of one host and pid namespace, with a
// start time, its own view of the world's filesystem and the world's clock.
type Process struct {
	u   *universe
	ns  *namespace
	pid int
	id  platform.Identity
	fs  *actor

	killed atomic.Bool
	died   chan struct{} // closed once the process is dead and buried

	mu      sync.Mutex
	selfErr error

	watches map[*watch]struct{} // ended when it dies

	sqliteOnce sync.Once
	sqliteVal  *processSQLite
}

// PID returns the process's pid in its pid namespace.
func (p *Process) PID() int { return p.pid }

// Identity returns who the process is: host, boot id, pid, start time and
// pid namespace. It does not fail, whatever FailIdentity staged.
func (p *Process) Identity() platform.Identity { return p.id }

// Alive reports whether the process has not been killed (by Kill or a
// Reboot of its host).
func (p *Process) Alive() bool { return !p.killed.Load() }

// Platform returns the process's platform: its own FS view and SQLite (the
// same values every call, and no other process's; the SQLite takes its
// locks as the FS's byte-range locks and opens no connections: package
// fakesql's platforms have those), its Process facts, the
// world's clock, and a Waker that a change of a watched name in the
// world's filesystem, or the death of a watched pid, wakes. Every call
// returns a new Platform holding those values, as platform.Native does.
func (p *Process) Platform() *platform.Platform {
	pp := procPlatform{p}
	return &platform.Platform{FS: p.fs, SQLite: p.sqlite(), Process: pp, Clock: pp, Wake: pp}
}

// FailIdentity makes the process's Platform.Process.Self fail with err from
// now on, as in a sandbox that denies /proc; nil makes it answer again.
// Stage it before the process first asks: a real Self never changes its
// answer.
func (p *Process) FailIdentity(err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.selfErr = err
}

// Kill ends the process, as SIGKILL would: its pid is free and no longer
// exists for Lookup, its open files (SQLite's too) are closed and its
// SQLite locks dropped, and every later operation through its Platform
// fails with an error matching ErrKilled: filesystem operations, SQLite's
// (I/O errors, or CANTOPEN), sleeps (a blocked one returns at once) and
// lookups. Self still answers: the identity of the dead is what locks
// record. Killing a dead process does nothing.
func (p *Process) Kill() {
	p.u.mu.Lock()
	died := p.die()
	p.u.mu.Unlock()
	if died {
		p.bury()
	}
}

// die marks p dead and frees its pid; it reports whether p was alive.
// u.mu is held.
func (p *Process) die() bool {
	if !p.killed.CompareAndSwap(false, true) {
		return false
	}
	delete(p.ns.procs, p.pid)
	return true
}

// bury does what the kernel does after a death: it closes the process's
// files in one step (which drops their SQLite locks), and ends its
// sleeps.
func (p *Process) bury() {
	p.u.fs.releaseAllOf(p)
	close(p.died)
	p.mu.Lock()
	watches := p.watches
	p.watches = nil
	p.mu.Unlock()
	for w := range watches {
		w.end()
	}
}

// procPlatform is the process's platform.Process, platform.Clock (the
// world's clock, whose sleeps end with ErrKilled when the process dies)
// and platform.Waker (wake.go).
type procPlatform struct{ p *Process }

var (
	_ platform.Process = procPlatform{}
	_ platform.Clock   = procPlatform{}
	_ platform.Waker   = procPlatform{}
)

func (pp procPlatform) Self() (platform.Identity, error) {
	pp.p.mu.Lock()
	defer pp.p.mu.Unlock()
	if pp.p.selfErr != nil {
		return platform.Identity{}, pp.p.selfErr
	}
	return pp.p.id, nil
}

// Lookup tells of pid in the caller's host and pid namespace.
func (pp procPlatform) Lookup(pid int) (platform.PIDInfo, error) {
	if !pp.p.Alive() {
		return platform.PIDInfo{}, pp.p.fail("lookup of pid %d", pid)
	}
	u := pp.p.u
	u.mu.Lock()
	defer u.mu.Unlock()
	if pid <= 0 {
		return platform.PIDInfo{}, fmt.Errorf("fake: lookup of pid %d: not a process id", pid)
	}
	if q := pp.p.ns.procs[pid]; q != nil {
		return platform.PIDInfo{Exists: true, StartTime: q.id.StartTime}, nil
	}
	return platform.PIDInfo{}, nil
}

func (pp procPlatform) Now() time.Time { return pp.p.u.clock.Now() }

func (pp procPlatform) Sleep(ctx context.Context, d time.Duration) error {
	if !pp.p.Alive() {
		return pp.p.fail("sleep")
	}
	err := pp.p.u.clock.sleep(ctx, d, newSleeper(), pp.p.died, nil)
	if err == ErrKilled {
		return pp.p.fail("sleep")
	}
	return err
}

// fail is the error of what a dead process tried.
func (p *Process) fail(what string, args ...any) error {
	return fmt.Errorf("fake: pid %d: %s: %w", p.pid, fmt.Sprintf(what, args...), ErrKilled)
}
