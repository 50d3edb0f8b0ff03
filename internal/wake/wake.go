// Package wake is the one wait of every acquisition (Pause), on a
// platform's wake-up source (platform.Waker), and the optional powers of a
// Waker found by type assertion: a watch kept across the waits of one
// acquisition (Watcher) and a held lock's watch for changes
// (ChangeWatcher). The native linux platform and package fake have them.
package wake

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/proclock/proclock/platform"
)

// Watcher is an optional power of a platform.Waker: a watch kept across
// the waits of one acquisition, so that a name that goes away during an
// attempt still wakes the next wait.
type Watcher interface {
	// Watch starts watching names (base names of entries of dir) going
	// away, as platform.Waker's Wait does; the caller closes it.
	Watch(dir string, names []string) (Watch, error)
}

// Watch is a kept watch (Watcher), serving one wait at a time: an alias of
// an interface literal, so that platform returns one without naming it.
type Watch = interface {
	// Wait is platform.Waker's Wait on the kept watch: a watched name
	// gone since the watch began, not yet told of, ends it at once.
	Wait(ctx context.Context, pid int, d time.Duration) (platform.Wakeup, error)
	// Close ends the watch.
	Close()
}

// Watching returns a context under which Pauses on p share one kept watch
// (Watcher), set up by the first of them, and stop, which ends it. Under
// a context that has one for p already, or when p's Wake keeps no watch,
// it returns ctx itself and a stop that does nothing.
func Watching(ctx context.Context, p *platform.Platform) (context.Context, func()) {
	if _, ok := p.Wake.(Watcher); !ok || watchingFor(ctx, p) != nil {
		return ctx, func() {}
	}
	s := &watchScope{p: p}
	return context.WithValue(ctx, watchKey{}, s), s.close
}

type watchKey struct{}

// watchScope is the kept watch of one Watching context.
type watchScope struct {
	p     *platform.Platform
	mu    sync.Mutex
	dir   string
	names []string
	w     Watch // nil until the first Pause, or after stop
	done  bool  // stopped
}

func watchingFor(ctx context.Context, p *platform.Platform) *watchScope {
	s, _ := ctx.Value(watchKey{}).(*watchScope)
	if s == nil || s.p != p {
		return nil
	}
	return s
}

func (s *watchScope) close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.done = true
	if s.w != nil {
		s.w.Close()
		s.w = nil
	}
}

// pause waits on the kept watch, set up first for dir and names when it
// watches others or none; ok is false when it cannot serve (stopped,
// serving another wait, the watch failed). Set up now, it reports woke at
// once: what went away before was not watched.
func (s *watchScope) pause(ctx context.Context, dir string, names []string, pid int, d time.Duration) (woke, ok bool, err error) {
	if !s.mu.TryLock() {
		return false, false, nil
	}
	defer s.mu.Unlock()
	if s.done {
		return false, false, nil
	}
	if s.w == nil || s.dir != dir || !slices.Equal(s.names, names) {
		if s.w != nil {
			s.w.Close()
			s.w = nil
		}
		w, err := s.p.Wake.(Watcher).Watch(dir, names)
		if err != nil {
			return false, false, nil
		}
		s.w, s.dir, s.names = w, dir, slices.Clone(names)
		return true, true, ctx.Err()
	}
	why, err := s.w.Wait(ctx, pid, d)
	return why != platform.WakeTimeout, true, err
}

// Pause waits d on p's clock, or less: with a wake-up source, until one of
// names in dir goes away or process pid exits (platform.Waker), reporting
// woke. It is the one wait of every acquisition; under a Watching
// context, its waits share one kept watch. It returns ctx.Err() when ctx
// ends first.
func Pause(ctx context.Context, p *platform.Platform, dir string, names []string, pid int, d time.Duration) (woke bool, err error) {
	if p.Wake == nil {
		return false, p.Time().Sleep(ctx, d)
	}
	if s := watchingFor(ctx, p); s != nil {
		if woke, ok, err := s.pause(ctx, dir, names, pid, d); ok {
			return woke, err
		}
	}
	why, err := p.Wake.Wait(ctx, dir, names, pid, d)
	return why != platform.WakeTimeout, err
}

// ChangeWatcher is an optional power of a platform.Waker: telling a holder
// at once that something may have happened to its lock's files
// (docs/design.md, "A lock that knows when it is lost"). Without it, a
// lock is looked at periodically.
type ChangeWatcher interface {
	// WatchChanges starts watching names (base names in the directory
	// dir) being created, removed, renamed or written, dir itself removed
	// or moved, a filesystem mounted or unmounted, and events lost. It
	// may tell of a change that is none, and of many as one. It costs no
	// goroutine of its own and no system call while nothing changes.
	WatchChanges(dir string, names []string) (Changes, error)
}

// Changes is a watch that WatchChanges started: an alias of an interface
// literal, so that platform, which this package imports, returns one
// without naming it.
type Changes = interface {
	// C receives a value when a watched name may have changed since the
	// last one was received. It is closed when the watch can see nothing
	// more (a fake process killed): the caller looks once more.
	C() <-chan struct{}
	// Stop ends the watch; once it has returned, C receives nothing
	// more. It may be called more than once.
	Stop()
}
