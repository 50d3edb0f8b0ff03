package platform

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"
)

// Waker is an optional power of a platform: it wakes a waiting Acquire as
// soon as the lock it waits for may have been let go, instead of after its
// back-off. Platform.Wake holds one; nil means waits sleep on the clock.
type Waker interface {
	// Wait returns when one of names (base names of entries of the
	// directory dir) is removed or renamed away; when process pid, of
	// this host and pid namespace, exits (pid <= 0: no process is
	// watched, though linux then watches the holder of a flock(2) write
	// lock on names[0] for a wait of 2 ms or more; a pid that is already
	// gone returns at once); with pid <= 0 (the fake world: with any),
	// when the file at names[0], write-locked by a byte-range lock
	// (SQLite's, a SQLite holder's kernel lock) as the wait began, is no
	// longer, reported as WakeChange: its holder let go or died, and the
	// caller's next try takes the lock; or when d has passed on the
	// platform's clock. It says which with its Wakeup. It
	// returns ctx.Err() when ctx ends first; any other error (a fake
	// process that was killed) ends the wait as ctx's would.
	//
	// A name going away is a holder letting go (or a reclaim ending).
	// Nothing else wakes it: a name created or renamed onto is someone
	// taking the lock, of no use to a waiter, and would wake every waiter
	// at once; and a waiter opens, reads and closes the lock's files on
	// every attempt, so waiters that woke on that would wake each other
	// for ever.
	//
	// Wait may wake for nothing (the caller just attempts again) and may
	// miss an event, which then costs no more than d. No goroutine it
	// starts and nothing it opens outlives it. A Waker that cannot watch
	// (out of descriptors, a directory it cannot read) waits out d.
	Wait(ctx context.Context, dir string, names []string, pid int, d time.Duration) (Wakeup, error)
}

// Wakeup says why a Waker's Wait returned.
type Wakeup int

const (
	// WakeTimeout: d passed, and nothing watched was seen to change.
	WakeTimeout Wakeup = iota
	// WakeChange: a watched name went away (or the directory itself did,
	// or events were lost: worth a look either way).
	WakeChange
	// WakeExit: the watched process exited, or was gone already.
	WakeExit
)

// String returns the wake-up as a word: "timeout", "change" or "exit".
func (w Wakeup) String() string {
	switch w {
	case WakeTimeout:
		return "timeout"
	case WakeChange:
		return "change"
	case WakeExit:
		return "exit"
	}
	return fmt.Sprintf("Wakeup(%d)", int(w))
}

// Watcher is an optional power of a Waker: a watch kept across the waits
// of one acquisition, so that a name that goes away while the waiter is
// not waiting (during its own attempt) still wakes its next wait, and no
// wait pays for setting the watch up again.
type Watcher interface {
	// Watch starts watching names (base names of entries of dir) going
	// away, as Waker.Wait does; the caller closes it.
	Watch(dir string, names []string) (Watch, error)
}

// Watch is a kept watch (Watcher). It serves one wait at a time.
type Watch interface {
	// Wait is Waker.Wait on the kept watch: a watched name that went
	// away since the watch began, and was not yet told of by an earlier
	// Wait, ends it at once with WakeChange.
	Wait(ctx context.Context, pid int, d time.Duration) (Wakeup, error)
	// Close ends the watch.
	Close()
}

// Watching returns a context under which p's Pauses share one kept watch
// (Watcher), set up by the first of them, and stop, which ends it. Under
// a context that has one for p already, or when p's Wake keeps no watch,
// it returns ctx itself and a stop that does nothing. An acquisition
// waits under one (docs/design.md, "Waiting").
func (p *Platform) Watching(ctx context.Context) (context.Context, func()) {
	if _, ok := p.Wake.(Watcher); !ok || watchingFor(ctx, p) != nil {
		return ctx, func() {}
	}
	s := &watchScope{p: p}
	return context.WithValue(ctx, watchKey{}, s), s.close
}

type watchKey struct{}

// watchScope is the kept watch of one Watching context.
type watchScope struct {
	p     *Platform
	mu    sync.Mutex
	dir   string
	names []string
	w     Watch // nil until the first Pause, or after stop
	done  bool  // stopped
}

func watchingFor(ctx context.Context, p *Platform) *watchScope {
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
	return why != WakeTimeout, true, err
}

// Pause waits d on p's clock, or less: with a wake-up source, until one of
// names in dir goes away or process pid exits (see Waker.Wait), reporting
// woke. It is the one wait of every acquisition: between attempts, in a
// first attempt's busy wait and retries, and while a stamp waits for a
// SQLite process to back off. Under a Watching context, the waits share
// one kept watch, which also sees what went away between them. It returns
// ctx.Err() when ctx ends first.
func (p *Platform) Pause(ctx context.Context, dir string, names []string, pid int, d time.Duration) (woke bool, err error) {
	if p.Wake == nil {
		return false, p.Time().Sleep(ctx, d)
	}
	if s := watchingFor(ctx, p); s != nil {
		if woke, ok, err := s.pause(ctx, dir, names, pid, d); ok {
			return woke, err
		}
	}
	why, err := p.Wake.Wait(ctx, dir, names, pid, d)
	return why != WakeTimeout, err
}
