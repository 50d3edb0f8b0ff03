package fake

import (
	"context"
	"path"
	"slices"
	"sync"
	"time"

	"github.com/proclock/proclock/platform"
)

// The waiters' queue of docs/protocol.md ("One waiter woken per
// release"): a lock's bell, with what of a FIFO polled with
// EPOLLEXCLUSIVE and locked with flock(2) the queue relies on. Each
// waiter's end of it is a platform.Bell that platform.QueueOn drives, the
// code the linux Queuer runs too, and each of its steps runs the world's
// hooks (OpBell), so that a scheduler can interleave them with the lock's
// own steps.
//
// A bell is not a file of the world's filesystem (no FS lists it); it is
// known by its path, cleaned and its symlinks not resolved, and holds
// only what its open ends make of it: once none is open, its unread bytes
// are gone, as a pipe's are.

// bells are a world's bells, by path.
type bells struct {
	mu    sync.Mutex
	m     map[string]*bell
	fault BellFault
}

// bell is one bell's state; guarded by bells.mu.
type bell struct {
	ends   []*bellEnd // open, in the order they joined
	unread int        // bytes rung and not read, at most platform.BellRoom
	holder *bellEnd   // the end that holds the flock(2) lock; nil: none
}

// bellEnd is one waiter's end of a bell: its descriptor, polled with
// EPOLLEXCLUSIVE until it leads, and the pidfd of the process it watches.
// Its fields but u, p and path are guarded by bells.mu.
type bellEnd struct {
	u    *universe
	p    *Process
	path string
	b    *bell

	open   bool
	polled bool     // in its epoll set: joined, and not the head
	listed bool     // the bell is on its epoll's ready list
	asleep *sleeper // asleep in epoll_wait, in the bell's wait queue
	woken  bool     // a ring took it out of the wait queue, since it slept
	// watched is the process whose death it polls (WatchPID); nil: none.
	watched *Process
	// left: it has let go of the flock(2) lock (Unlock), and rung
	// rings since (BellOneRing).
	left  bool
	rings int
}

// BellFault is a mutation of how queued waiters leave a bell, for a test
// to show that what checks the queue catches it (World.BreakBells).
type BellFault int

const (
	// BellSound: no fault.
	BellSound BellFault = iota
	// BellUnlockLast: a leaving head lets go of the bell's flock(2)
	// lock only as it closes the bell, after its rings (docs/queue.pml's
	// M_RING_FIRST).
	BellUnlockLast
	// BellOneRing: a leaving head's second ring writes nothing
	// (docs/queue.pml's M_ONE_RING).
	BellOneRing
)

func (f BellFault) String() string {
	switch f {
	case BellSound:
		return "sound"
	case BellUnlockLast:
		return "unlock last"
	case BellOneRing:
		return "one ring"
	}
	return "BellFault(?)"
}

// BreakBells makes every waiter of the world leave its bell with fault
// from now on (BellSound: as it should).
func (w *World) BreakBells(fault BellFault) {
	bs := &w.u.bells
	bs.mu.Lock()
	defer bs.mu.Unlock()
	bs.fault = fault
}

// Queuer returns a platform.Queuer of p's, whose queues' bells are the
// world's (above), whose waits behind the head end at the latest at their
// bound on the world's clock, and whose head watches the lock's names and
// holder with heads.Watch (nil: a watch each of whose waits is one of
// p's Waker, Platform's Wake). A name of the world's filesystem at the
// bell's path (a user's file) is left alone: Queue gives heads's watch.
func (p *Process) Queuer(heads platform.Watcher) platform.Queuer {
	if heads == nil {
		heads = queueWake{procPlatform{p}}
	}
	return queuer{p: p, heads: heads}
}

// QueueWake returns p's Waker (Platform's Wake) with the waiters' queue:
// a platform.Watcher, each of whose kept watch's waits is one of the
// Waker's, and a platform.Queuer, Queuer(nil).
func (p *Process) QueueWake() platform.Waker { return queueWake{procPlatform{p}} }

type queueWake struct{ procPlatform }

var (
	_ platform.Watcher = queueWake{}
	_ platform.Queuer  = queueWake{}
)

func (w queueWake) Watch(dir string, names []string) (platform.Watch, error) {
	return &waitWatch{pp: w.procPlatform, dir: dir, names: slices.Clone(names)}, nil
}

func (w queueWake) Queue(dir string, names []string, bell string) (platform.Watch, error) {
	return w.p.Queuer(w).Queue(dir, names, bell)
}

// waitWatch is a kept watch each of whose waits is one Wait of the
// process's Waker: what changed since the process last looked ends it at
// once (wake.go), as a kept watch's queued events would.
type waitWatch struct {
	pp    procPlatform
	dir   string
	names []string
}

func (w *waitWatch) Wait(ctx context.Context, pid int, d time.Duration) (platform.Wakeup, error) {
	return w.pp.Wait(ctx, w.dir, w.names, pid, d)
}

func (w *waitWatch) Close() {}

type queuer struct {
	p     *Process
	heads platform.Watcher
}

func (q queuer) Queue(dir string, names []string, bell string) (platform.Watch, error) {
	p, u := q.p, q.p.u
	at := clean(path.Join(dir, bell))
	if _, err := u.fs.world.Lstat(at); err == nil {
		return q.heads.Watch(dir, names) // not a bell: left alone
	}
	e, err := u.joinBell(p, at)
	if err != nil {
		return nil, err
	}
	watch := func() platform.Watch {
		if w, err := q.heads.Watch(dir, names); err == nil {
			return w
		}
		return &waitWatch{pp: procPlatform{p}, dir: dir, names: slices.Clone(names)}
	}
	return platform.QueueOn(e, procPlatform{p}, p.pid, watch), nil
}

// joinBell opens p's end of the bell at path (cleaned), polled, and
// makes the bell if there is none.
func (u *universe) joinBell(p *Process, at string) (*bellEnd, error) {
	e := &bellEnd{u: u, p: p, path: at}
	if err := e.step("join", nil); err != nil {
		return nil, err
	}
	bs := &u.bells
	bs.mu.Lock()
	defer bs.mu.Unlock()
	if !p.Alive() {
		return nil, p.fail("join the bell %s", at)
	}
	if bs.m == nil {
		bs.m = make(map[string]*bell)
	}
	b := bs.m[at]
	if b == nil {
		b = &bell{}
		bs.m[at] = b
	}
	e.b, e.open, e.polled, e.listed = b, true, true, b.unread > 0
	b.ends = append(b.ends, e)
	return e, nil
}

var _ platform.Bell = (*bellEnd)(nil)

// step runs the hooks of one step of e's (a system call natively); an
// error, or the process's death, means it is not taken.
func (e *bellEnd) step(call string, sleep *Sleep) error {
	if !e.p.Alive() {
		return e.p.fail("%s the bell %s", call, e.path)
	}
	ev := Event{Op: OpBell, Call: call, Path: e.path, PID: e.p.pid, When: Before, Sleep: sleep}
	if err := e.u.hooks.fire(ev); err != nil {
		return err
	}
	if !e.p.Alive() {
		return e.p.fail("%s the bell %s", call, e.path)
	}
	return nil
}

// lock takes the bells' lock, reporting whether e can act: open, and
// its process alive. The caller unlocks.
func (e *bellEnd) lock() bool {
	e.u.bells.mu.Lock()
	return e.open && e.p.Alive()
}

func (e *bellEnd) unlock() { e.u.bells.mu.Unlock() }

func (e *bellEnd) Lead() bool {
	if e.step("flock", nil) != nil {
		return false
	}
	defer e.unlock()
	if !e.lock() || e.b.holder != nil {
		return false
	}
	e.b.holder, e.polled, e.listed = e, false, false
	return true
}

func (e *bellEnd) Unlock() {
	if e.step("unlock", nil) != nil {
		return
	}
	defer e.unlock()
	if !e.lock() || e.b.holder != e {
		return
	}
	e.left, e.rings = true, 0
	if e.u.bells.fault == BellUnlockLast {
		return // let go of as it closes
	}
	e.b.holder = nil
}

// Ring writes a byte, unless the bell is full: it goes through the
// pollers in the order they joined, puts the bell on the ready list of
// each one that is awake, and wakes the first one asleep, which ends the
// walk.
func (e *bellEnd) Ring() {
	if e.step("ring", nil) != nil {
		return
	}
	defer e.unlock()
	if !e.lock() {
		return
	}
	if e.left {
		if e.rings++; e.rings == 2 && e.u.bells.fault == BellOneRing {
			return
		}
	}
	b := e.b
	if b.unread >= platform.BellRoom {
		return
	}
	b.unread++
	for _, o := range b.ends {
		if !o.polled {
			continue
		}
		o.listed = true
		if o.asleep != nil {
			o.woken = true
			o.wake()
			return
		}
	}
}

// wake takes e out of the bell's wait queue, ending its sleep; bells.mu
// is held.
func (e *bellEnd) wake() {
	if s := e.asleep; s != nil {
		e.asleep = nil
		e.u.clock.end(s)
	}
}

func (e *bellEnd) Take() {
	if e.step("read", nil) != nil {
		return
	}
	defer e.unlock()
	if e.lock() && e.b.unread > 0 {
		e.b.unread--
	}
}

// Holder is the pid of the process whose end holds the bell's flock(2)
// lock, when it is of e's pid namespace.
func (e *bellEnd) Holder() int {
	if e.step("holder", nil) != nil {
		return 0
	}
	defer e.unlock()
	if !e.lock() || e.b.holder == nil || e.b.holder.p.ns != e.p.ns {
		return 0
	}
	return e.b.holder.p.pid
}

func (e *bellEnd) WatchPID(pid int) bool {
	if e.step("pidfd", nil) != nil {
		return false
	}
	u := e.u
	u.mu.Lock()
	proc := e.p.ns.procs[pid]
	u.mu.Unlock()
	defer e.unlock()
	if !e.lock() || proc == nil {
		return false
	}
	e.watched = proc
	return true
}

func (e *bellEnd) UnwatchPID() {
	defer e.unlock()
	e.lock()
	e.watched = nil
}

// due reports whether a sleep of e's ends now: the bell on its ready list
// and readable, or the process it watches dead (its files closed, its
// bells' ends too, as a pidfd is readable once they are). bells.mu is
// held.
func (e *bellEnd) due() bool {
	return e.listed && e.b.unread > 0 || e.watched != nil && closed(e.watched.died)
}

// Sleep is one epoll_wait: a step ("poll") that ends it at once when the
// bell is on e's ready list and readable or the process watched is dead,
// or else puts e in the bell's wait queue; then a step ("wake") that
// comes once a ring has taken it out, the process watched died, d passed
// on the world's clock, ctx ended or e's process died (Event.Sleep tells
// a hook when).
func (e *bellEnd) Sleep(ctx context.Context, d time.Duration) (rang, died bool, err error) {
	if err := e.step("poll", nil); err != nil {
		return false, false, err
	}
	var s *sleeper
	var exited <-chan struct{}
	if e.lock() && !e.due() {
		s = newSleeper()
		e.asleep, e.woken = s, false
		if e.watched != nil {
			exited = e.watched.died
		}
	}
	e.unlock()
	if s != nil {
		ready := func() bool {
			defer e.unlock()
			return !e.lock() || e.woken || e.due() || ctx.Err() != nil
		}
		if err := e.step("wake", &Sleep{ready}); err != nil {
			return false, false, err
		}
		if !ready() {
			if err := e.u.clock.sleep(ctx, d, s, e.p.died, exited); err != nil && err != ErrKilled {
				return false, false, err
			}
		}
	}
	defer e.unlock()
	if !e.lock() {
		return false, false, e.p.fail("sleep on the bell %s", e.path)
	}
	e.wake()
	e.woken = false
	rang = e.listed && e.b.unread > 0
	if !rang {
		e.listed = false // level-triggered: off the ready list once not readable
	}
	died = e.watched != nil && closed(e.watched.died)
	return rang, died, ctx.Err()
}

// Close closes e: the bell's flock(2) lock with it, if e holds it.
func (e *bellEnd) Close() {
	e.step("close", nil) // a dead process's end is closed all the same
	e.u.bells.mu.Lock()
	defer e.u.bells.mu.Unlock()
	e.drop()
}

// drop closes e; bells.mu is held.
func (e *bellEnd) drop() {
	if !e.open {
		return
	}
	b := e.b
	e.open, e.polled, e.watched = false, false, nil
	e.wake()
	if b.holder == e {
		b.holder = nil
	}
	b.ends = slices.DeleteFunc(b.ends, func(o *bellEnd) bool { return o == e })
	if len(b.ends) == 0 {
		b.unread = 0 // no one has it open: a pipe's bytes are gone
	}
}

// dropBells closes the ends of p's, as its death closes its descriptors:
// its flock(2) locks go, and its places in the bells' queues.
func (u *universe) dropBells(p *Process) {
	bs := &u.bells
	bs.mu.Lock()
	defer bs.mu.Unlock()
	for _, b := range bs.m {
		for _, e := range slices.Clone(b.ends) {
			if e.p == p {
				e.drop()
			}
		}
	}
}
