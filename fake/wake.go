package fake

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/proclock/proclock/platform"
)

// Wait is the process's platform.Waker: the clock's sleep, which a watched
// name going away from the world's filesystem (removed or renamed away, by
// any process or the world itself) ends early, and so does the death of
// the watched pid, of the process's host and pid namespace. A name that
// was not there when the wait began is not watched. The first name's file,
// when SQLite's locks were on it as the wait began, ends the wait too once
// nobody locks it: natively the waiter's next try finds it free at once,
// which on a frozen clock would never come. For that reason too, a wait
// that begins after such a change that the process did not see ends at
// once, reporting WakeChange: a watched name that no longer names what the
// process last saw there, or the first name's file, found locked by
// another at the process's last look at its locks, let go by everyone
// since (look.go). The change came between the waiter's last look and its
// wait (a SQLite holder's release, in two steps, makes it come by itself:
// the mark's removal wakes the waiter, whose try finds SQLite's lock still
// held, and whose next wait begins after the holder let go of it). A wait
// that ends with WakeChange counts the names as seen, and what the process
// saw of the first name's lock table as old news, for its next try to look
// again. On a running clock
// time moves on by d at once, as a sleep does; on a frozen one the wait
// counts as a sleeper until it ends. A change staged by SwapInode or
// ReuseInode, which no hook sees, does not end it.
//
// It sleeps on the world's clock, not on whatever Clock its Platform was
// given since: a test that wraps Platform.Clock to watch sleeps wraps Wake
// too, or clears it.
func (pp procPlatform) Wait(ctx context.Context, dir string, names []string, pid int, d time.Duration) (platform.Wakeup, error) {
	p, u := pp.p, pp.p.u
	if !p.Alive() {
		return platform.WakeTimeout, p.fail("sleep")
	}
	if err := ctx.Err(); err != nil || d <= 0 {
		return platform.WakeTimeout, err
	}
	var exited <-chan struct{}
	if pid > 0 {
		u.mu.Lock()
		holder := p.ns.procs[pid]
		u.mu.Unlock()
		if holder == nil {
			return platform.WakeExit, nil
		}
		exited = holder.died
	}
	// Watching starts before the wait counts as a sleeper, and a change
	// ends the sleep in the changing goroutine: once a test has seen the
	// wait sleep, any change it makes is seen, and once the change is
	// made, WaitSleepers no longer counts this wait.
	s := newSleeper()
	w := u.watchNames(p, dir, names, func() { u.clock.end(s) })
	defer w.stop()
	if w.missed {
		w.seen()
		return platform.WakeChange, nil
	}
	err := u.clock.sleep(ctx, d, s, p.died, exited)
	// When several came together, the most telling wins.
	switch {
	case ctx.Err() != nil:
		return platform.WakeTimeout, ctx.Err()
	case err == ErrKilled || !p.Alive():
		return platform.WakeTimeout, p.fail("sleep")
	case closed(exited):
		return platform.WakeExit, nil
	case closed(w.changed):
		w.seen()
		return platform.WakeChange, nil
	}
	return platform.WakeTimeout, nil
}

// closed reports whether c is closed; a nil c never is.
func closed(c <-chan struct{}) bool {
	select {
	case <-c:
		return c != nil
	default:
		return false
	}
}

// nameWatch notices names, entries of one directory, going away: one that
// was there when the watch began is not there any more. It looks after
// every operation of the world, through a hook.
type nameWatch struct {
	m        *memfs
	names    []string
	changed  chan struct{}
	onChange func() // called once, with changed closed
	once     sync.Once
	remove   func()

	// Guarded by m.mu.
	dir *inode   // nil when dir could not be resolved: nothing is watched
	was []*inode // what names were when the watch began; nil: absent
	// locked is the file at the first name, when SQLite's lock table
	// held it as the watch began: the table's emptying ends the wait too.
	locked *inode
	// missed: a change the process did not see came before the watch
	// began (Process.missed); set once, as it begins.
	missed bool
	proc   *Process
}

// watchNames starts watching names in dir (its symlinks resolved, so any
// path to it is seen) for p; onChange runs in the goroutine that makes one
// go.
func (u *universe) watchNames(p *Process, dir string, names []string, onChange func()) *nameWatch {
	w := &nameWatch{m: u.fs, names: slices.Clone(names), changed: make(chan struct{}), onChange: onChange, proc: p}
	w.remove = u.hooks.add(&hook{op: OpAny, when: After, fn: w.look})
	w.m.mu.Lock()
	defer w.m.mu.Unlock()
	if at, err := w.m.resolve(w.m.world, dir, true); err == nil && at.node != nil && at.node.isDir() {
		w.dir = at.node
		w.was = make([]*inode, len(w.names))
		for i, name := range w.names {
			w.was[i] = w.dir.entries[name]
		}
		if len(w.names) > 0 && w.was[0] != nil && len(w.was[0].locks) > 0 {
			w.locked = w.was[0]
		}
		w.missed = p.missed(w.dir, w.names)
	}
	return w
}

// seen records that the wait told its process of a change (Process.told):
// what it told of is no longer missed.
func (w *nameWatch) seen() {
	w.m.mu.Lock()
	defer w.m.mu.Unlock()
	if w.dir != nil {
		w.proc.told(w.dir, w.names)
	}
}

// gone reports whether a name that was there when the watch began is not
// there now, or the file at the first name, locked then, is no longer
// locked by anyone: a SQLite holder lets go of its kernel lock a moment
// after it removes its mark, and natively the waiter that the mark's
// removal woke, should its try come in between, is woken again as the
// holder closes the file (platform.Waker); on a frozen clock a try after
// a pause would never come. m.mu is held.
func (w *nameWatch) gone() bool {
	if w.locked != nil && len(w.locked.locks) == 0 {
		return true
	}
	for i, name := range w.names {
		if w.dir != nil && w.was[i] != nil && w.dir.entries[name] == nil {
			return true
		}
	}
	return false
}

// look runs after every operation: it closes changed once a name is gone.
func (w *nameWatch) look(Event) error {
	w.m.mu.Lock()
	gone := w.gone()
	w.m.mu.Unlock()
	if gone {
		w.once.Do(func() {
			close(w.changed)
			w.onChange()
		})
	}
	return nil
}

func (w *nameWatch) stop() { w.remove() }
