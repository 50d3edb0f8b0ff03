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

// ErrKilled is what a killed process's operations fail with, wrapped.
var ErrKilled = errors.New("fake: process killed")

// Process is a fake process: a pid of one host and pid namespace, with a
// start time and its own view of the world's filesystem.
type Process struct {
	u   *universe
	ns  *namespace
	pid int
	id  platform.Identity
	fs  *actor

	killed atomic.Bool
	died   chan struct{} // closed once dead and buried

	mu      sync.Mutex
	selfErr error
	watches map[*watch]struct{} // ended when it dies
}

// PID returns the process's pid.
func (p *Process) PID() int { return p.pid }

// Identity returns who the process is, whatever FailIdentity staged.
func (p *Process) Identity() platform.Identity { return p.id }

// Alive reports whether the process was not killed (Kill, Reboot).
func (p *Process) Alive() bool { return !p.killed.Load() }

// Platform returns a new Platform holding the process's own FS and SQLite
// (which takes its locks as the FS's byte-range locks: fakesql's have
// connections), its process facts, the world's clock, and a wake-up
// source (wake.go).
func (p *Process) Platform() *platform.Platform {
	pp := procPlatform{p}
	return &platform.Platform{FS: p.fs, SQLite: pp, Process: pp, Clock: pp, Wake: pp}
}

// FailIdentity makes the process's Self fail with err, as in a sandbox
// that denies /proc; nil undoes it. Stage it before the process asks.
func (p *Process) FailIdentity(err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.selfErr = err
}

// Kill ends the process as SIGKILL would: its pid is free, its files are
// closed and its locks dropped, and every later operation through its
// Platform (a blocked sleep too) fails with an error matching ErrKilled.
// Self still answers: the identity of the dead is what locks record.
func (p *Process) Kill() {
	p.u.mu.Lock()
	died := p.die()
	p.u.mu.Unlock()
	if died {
		p.bury()
	}
}

// die marks p dead and frees its pid, reporting whether it was alive;
// u.mu is held.
func (p *Process) die() bool {
	if !p.killed.CompareAndSwap(false, true) {
		return false
	}
	delete(p.ns.procs, p.pid)
	return true
}

// bury closes the dead process's files in one step, and ends its waits.
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

// procPlatform is the process's platform.Process, Clock, SQLite and Waker.
type procPlatform struct{ p *Process }

var (
	_ platform.Process = procPlatform{}
	_ platform.Clock   = procPlatform{}
	_ platform.SQLite  = procPlatform{}
)

func (procPlatform) LocksBytes() bool { return true }

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

func (pp procPlatform) Now() time.Time { return pp.p.u.fs.clock.Now() }

func (pp procPlatform) Sleep(ctx context.Context, d time.Duration) error {
	if !pp.p.Alive() {
		return pp.p.fail("sleep")
	}
	err := pp.p.u.fs.clock.sleep(ctx, d, newSleeper(), pp.p.died, nil)
	if err == ErrKilled {
		return pp.p.fail("sleep")
	}
	return err
}

// fail is the error of what a dead process tried.
func (p *Process) fail(what string, args ...any) error {
	return fmt.Errorf("fake: pid %d: %s: %w", p.pid, fmt.Sprintf(what, args...), ErrKilled)
}
