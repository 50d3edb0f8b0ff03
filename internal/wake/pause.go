package wake

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/proclock/proclock/platform"
)

// Watcher is an optional power of a platform.Waker: a watch kept across
// the waits of one acquisition, so that a name that goes away while the
// waiter is not waiting (during its own attempt) still wakes its next
// wait, and no wait pays for setting the watch up again.
type Watcher interface {
	// Watch starts watching names (base names of entries of dir) going
	// away, as platform.Waker's Wait does; the caller closes it.
	Watch(dir string, names []string) (Watch, error)
}

// Watch is a kept watch (Watcher). It serves one wait at a time. It is an
// alias of an interface literal, so that platform, which this package
// imports, returns one (its keptWatch) without naming it.
type Watch = interface {
	// Wait is platform.Waker's Wait on the kept watch: a watched name
	// that went away since the watch began, and was not yet told of by
	// an earlier Wait, ends it at once with platform.WakeChange.
	Wait(ctx context.Context, pid int, d time.Duration) (platform.Wakeup, error)
	// Close ends the watch.
	Close()
}

// Watching returns a context under which Pauses on p share one kept watch
// (Watcher), set up by the first of them, and stop, which ends it. Under
// a context that has one for p already, or when p's Wake keeps no watch,
// it returns ctx itself and a stop that does nothing. An acquisition
// waits under one (docs/design.md, "Waiting").
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

// pause waits on the kept watch, setting it up first for dir and names
// when it watches other names or none; ok is false when it cannot serve
// (stopped, serving another wait, or the watch failed), for the caller
// to wait otherwise. Set up now, it ends at once reporting woke: what
// went away before was not watched, so the caller looks again.
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
// names in dir goes away or process pid exits (see platform.Waker), reporting
// woke. It is the one wait of every acquisition: between attempts, in a
// first attempt's busy wait and retries, and while a stamp waits for a
// SQLite process to back off. Under a Watching context, the waits share
// one kept watch, which also sees what went away between them. It returns
// ctx.Err() when ctx ends first.
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
