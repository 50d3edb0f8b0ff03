package proclock

import (
	"context"
	"path/filepath"
	"sync"
	"time"

	"github.com/proclock/proclock/internal/lockrec"
	"github.com/proclock/proclock/internal/wake"
)

// ErrRemoved is matched (errors.Is) by a lost lock's error (Lock.Err) when
// one of its files is no longer at its path: the lock file or its mark
// (path.holder) removed or renamed away, the directory removed or moved,
// the filesystem unmounted.
var ErrRemoved = lockrec.ErrRemoved

// ErrReplaced is matched by a lost lock's error when another file is at
// the path of one of its files (renamed or created over it), or when the
// lock file's bytes are no longer its holder's stamp (written over).
var ErrReplaced = lockrec.ErrReplaced

// checker looks at a held lock's files: nil while whole, else the cause
// of its loss. At is the lock's path made absolute when taken, which
// Check judges and the watch watches, whatever the working directory is
// later. An interface, so that a lock never asked costs no allocation.
type checker interface {
	Check() error
	At() string
}

// lossLookEvery is how often a held lock is looked at for its loss on a
// platform that cannot tell of changes (no wake.ChangeWatcher).
const lossLookEvery = time.Second

// Lost returns a channel that is closed once the lock is known to be lost
// without Release: its file or its mark (path.holder) removed or replaced
// at its path, or its directory or filesystem gone. Err then says why. A
// Release never closes it.
//
// The first call to Lost or Err starts watching and looks at the lock at
// once. On linux the watch is inotify, shared by all the locks of the
// process, and tells within microseconds; elsewhere the lock is looked at
// every second (docs/design.md, "A lock that knows when it is lost"). A
// platform whose Clock's sleeps return at once needs a Wake that tells of
// changes, or the looks spin: give a fake process's Wake.
//
// A lost lock is not given up: what is left of it keeps excluding others
// as long as it can, and it is never taken back by itself
// (docs/protocol.md, "A held lock's files removed"). Its holder should
// stop what it does under the lock, Release it, and Acquire it again if
// it still needs it.
func (l *Lock) Lost() <-chan struct{} {
	w := l.watched()
	defer w.mu.Unlock()
	return w.lost
}

// Err returns nil while the lock is held, or after a clean Release; once
// the lock is known to be lost (Lost), a *LostError, matching ErrLost, that
// wraps the cause, matching ErrRemoved or ErrReplaced. The first call (of
// Lost or Err) starts the watch and looks at once.
func (l *Lock) Err() error {
	w := l.watched()
	defer w.mu.Unlock()
	return w.err
}

// watched is l's watch, started unless started, released or lost, and
// returned locked. Watching starts before the first look, so that nothing
// after the look goes unseen.
func (l *Lock) watched() *lossWatch {
	w := l.loss.Load()
	if w == nil {
		l.loss.CompareAndSwap(nil, &lossWatch{})
		w = l.loss.Load()
	}
	w.mu.Lock()
	if w.lost == nil {
		w.lost = make(chan struct{})
	}
	if w.started || w.ended || l.check == nil {
		return w
	}
	w.started = true
	changes := l.watchChanges()
	if err := l.check.Check(); err != nil {
		w.lose(l.path, err)
		if changes != nil {
			changes.Stop()
		}
		return w
	}
	ctx, quit := context.WithCancel(context.Background())
	w.quit, w.done = quit, make(chan struct{})
	go l.watchFor(ctx, w, changes)
	return w
}

// releasedWatch is the watch of every lock released before it was asked:
// never lost, never watched.
var releasedWatch = &lossWatch{lost: make(chan struct{}), ended: true}

// lossWatch is a held lock's watch for its loss.
type lossWatch struct {
	mu      sync.Mutex
	lost    chan struct{} // made by the first Lost or Err; closed on loss
	err     error         // the *LostError, once lost
	started bool
	ended   bool               // released (stopWatch): no look is made after
	quit    context.CancelFunc // ends the watcher; nil without one
	done    chan struct{}      // closed when the watcher has returned
}

// watchChanges starts the platform's watch of the lock's files; nil when
// it has none (or it failed): the lock is then looked at periodically.
func (l *Lock) watchChanges() wake.Changes {
	if l.p == nil {
		return nil
	}
	cw, ok := l.p.Wake.(wake.ChangeWatcher)
	if !ok {
		return nil
	}
	at := l.check.At()
	base := filepath.Base(at)
	c, err := cw.WatchChanges(filepath.Dir(at), []string{base, lockrec.SidecarName(base, lockrec.MarkSuffix)})
	if err != nil {
		return nil
	}
	return c
}

// watchFor looks at the lock whenever changes tells of a change, or every
// lossLookEvery without it, until ctx ends (Release) or the loss.
func (l *Lock) watchFor(ctx context.Context, w *lossWatch, changes wake.Changes) {
	defer close(w.done)
	if changes != nil {
		defer changes.Stop()
	}
	for {
		if changes != nil {
			select {
			case _, ok := <-changes.C():
				if !ok {
					l.lookForLoss(w) // the watch can see no more
					return
				}
			case <-ctx.Done():
				return
			}
		} else if err := l.p.Time().Sleep(ctx, lossLookEvery); err != nil {
			return
		}
		if !l.lookForLoss(w) {
			return
		}
	}
}

// lookForLoss looks at the lock, unless it was released; it reports
// whether to go on watching.
func (l *Lock) lookForLoss(w *lossWatch) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.ended {
		return false
	}
	if err := l.check.Check(); err != nil {
		w.lose(l.path, err)
		return false
	}
	return true
}

// lose records the loss and tells of it; w.mu is held.
func (w *lossWatch) lose(path string, cause error) {
	w.err = &LostError{Path: path, Err: cause}
	close(w.lost)
}

// stopWatch ends the watch before the lock is let go (or handed over):
// no look is made after it returns, and the watcher has returned.
func (l *Lock) stopWatch() {
	if l.loss.CompareAndSwap(nil, releasedWatch) {
		return // never asked
	}
	w := l.loss.Load()
	if w == releasedWatch {
		return
	}
	w.mu.Lock()
	w.ended = true
	quit, done := w.quit, w.done
	w.quit = nil
	w.mu.Unlock()
	if quit != nil {
		quit()
		<-done
	}
}
