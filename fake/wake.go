package fake

import (
	"context"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/proclock/proclock/fake/internal/sqlfile"
	"github.com/proclock/proclock/internal/wake"
	"github.com/proclock/proclock/platform"
)

// A process's wake-up source (platform.Waker, Watcher) and its held locks'
// watch (wake.ChangeWatcher) are told of a change in the goroutine
// that made it, before it returns: a test that made one needs nothing
// else for it to be seen.
var (
	_ platform.Waker     = procPlatform{}
	_ wake.Watcher       = procPlatform{}
	_ wake.ChangeWatcher = procPlatform{}
)

// watch is one watch of a process; c holds one change not yet told of.
type watch struct {
	p      *Process
	c      chan struct{}
	remove func()
	mu     sync.Mutex
	ended  bool     // c closed (the process died), or stopped
	s      *sleeper // the Wait under way, which a change ends

	// A kept watch's, guarded by memfs.mu: the directory (nil: none),
	// what names named at the last look, and the file at names[0] when
	// another process locked it then.
	dir    *inode
	names  []string
	was    []*inode
	locked *inode
}

// start registers w with its process, which ends it when it dies; remove
// stops what tells it of changes.
func (w *watch) start(remove func()) *watch {
	w.c, w.remove = make(chan struct{}, 1), remove
	w.p.mu.Lock()
	if w.p.watches == nil {
		w.p.watches = map[*watch]struct{}{}
	}
	w.p.watches[w] = struct{}{}
	w.p.mu.Unlock()
	if !w.p.Alive() {
		w.end() // killed while it was set up
	}
	return w
}

func (w *watch) tell() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.ended {
		return
	}
	select {
	case w.c <- struct{}{}:
	default: // one is pending already
	}
	if w.s != nil {
		w.p.u.fs.clock.end(w.s)
	}
}

// end closes c: the process died.
func (w *watch) end() {
	w.remove()
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.ended {
		w.ended = true
		close(w.c)
	}
}

func (w *watch) C() <-chan struct{} { return w.c }

func (w *watch) Stop() {
	w.remove()
	w.p.mu.Lock()
	delete(w.p.watches, w)
	w.p.mu.Unlock()
	w.mu.Lock()
	w.ended = true
	w.mu.Unlock()
}

func (w *watch) Close() { w.Stop() }

// WatchChanges tells of every operation, by a hook, that may change one of
// names in dir, or dir or a directory above it.
func (pp procPlatform) WatchChanges(dir string, names []string) (wake.Changes, error) {
	if !pp.p.Alive() {
		return nil, pp.p.fail("watch")
	}
	dir = sqlfile.Clean(dir)
	paths := []string{dir}
	for _, name := range names {
		paths = append(paths, sqlfile.Clean(dir+"/"+name))
	}
	touches := func(path string) bool {
		return path != "" && (slices.Contains(paths, path) || path == "/" || strings.HasPrefix(dir, path+"/"))
	}
	w := &watch{p: pp.p}
	return w.start(pp.p.u.fs.hooks.add(&hook{after: true, fn: func(ev Event) error {
		if mutates(ev) && (touches(ev.Path) || touches(ev.NewPath)) {
			w.tell()
		}
		return nil
	}})), nil
}

// mutates reports whether ev may have changed a name or a file's bytes.
func mutates(ev Event) bool {
	switch ev.Op {
	case opRemove, opRename, opRenameNoReplace, opLink, opWrite, opTruncate:
		return true
	case opOpen:
		return ev.Flag&(os.O_CREATE|os.O_TRUNC) != 0
	}
	return false
}

// Watch keeps a watch of names in dir across one acquisition's waits: one
// of them going away, or the file at names[0], locked by another process,
// let go by all (a release, a Kill), ends the next Wait, at once if it
// came between. That last stands for linux's watch of a lock's holder:
// on a frozen clock the waiter's next try would never come.
func (pp procPlatform) Watch(dir string, names []string) (wake.Watch, error) {
	p := pp.p
	if !p.Alive() {
		return nil, p.fail("watch")
	}
	w := &watch{p: p, names: slices.Clone(names)}
	m := p.u.fs
	m.mu.Lock()
	if at, err := m.resolve(dir, true); err == nil && at.node != nil && at.node.isDir() {
		w.dir, w.was = at.node, make([]*inode, len(names))
		w.look()
		m.watches[w] = struct{}{}
	}
	m.mu.Unlock()
	return w.start(func() {
		m.mu.Lock()
		defer m.mu.Unlock()
		delete(m.watches, w)
	}), nil
}

// lookAll tells the kept watches of a change; m.mu is held by its maker.
func (m *memfs) lookAll() {
	for w := range m.watches {
		if w.look() {
			w.tell()
		}
	}
}

// look reports whether a name went away, or the file locked by another
// is let go by all, since the last look; memfs.mu is held.
func (w *watch) look() (changed bool) {
	if w.dir == nil {
		return false
	}
	for i, name := range w.names {
		now := w.dir.entries[name]
		changed = changed || w.was[i] != nil && now == nil
		w.was[i] = now
	}
	changed = changed || w.locked != nil && !w.p.othersLock(w.locked)
	w.locked = nil
	if len(w.names) > 0 && w.was[0] != nil && w.p.othersLock(w.was[0]) {
		w.locked = w.was[0]
	}
	return changed
}

// othersLock reports whether another's file locks n; memfs.mu is held.
func (p *Process) othersLock(n *inode) bool {
	for d := range n.locks {
		if d.by.proc != p {
			return true
		}
	}
	return false
}

// Wait is a kept watch's one Wait. It sleeps on the world's clock: a test
// that wraps Platform.Clock wraps Wake too, or clears it.
func (pp procPlatform) Wait(ctx context.Context, dir string, names []string, pid int, d time.Duration) (platform.Wakeup, error) {
	w, err := pp.Watch(dir, names)
	if err != nil {
		return platform.WakeTimeout, err
	}
	defer w.Close()
	return w.Wait(ctx, pid, d)
}

// Wait sleeps d on the world's clock, or until a change (Watch) or the
// death of process pid. A change ends it in the changing goroutine, so
// that once a test made one, WaitSleepers no longer counts this wait.
func (w *watch) Wait(ctx context.Context, pid int, d time.Duration) (platform.Wakeup, error) {
	p, u := w.p, w.p.u
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
	s := newSleeper()
	if w.told(s) {
		return platform.WakeChange, nil
	}
	err := u.fs.clock.sleep(ctx, d, s, p.died, exited)
	told := w.told(nil)
	switch { // when several came together, the most telling wins
	case ctx.Err() != nil:
		return platform.WakeTimeout, ctx.Err()
	case err == ErrKilled || !p.Alive():
		return platform.WakeTimeout, p.fail("sleep")
	case closed(exited):
		return platform.WakeExit, nil
	case told:
		return platform.WakeChange, nil
	}
	return platform.WakeTimeout, nil
}

// told takes the change not yet told of, and makes s the wait the next
// one ends.
func (w *watch) told(s *sleeper) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.s = s
	select {
	case _, ok := <-w.c:
		return ok
	default:
		return false
	}
}

func closed(c <-chan struct{}) bool {
	select {
	case <-c:
		return c != nil
	default:
		return false
	}
}
