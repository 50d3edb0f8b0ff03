package proclock

import (
	"context"
	"path/filepath"
	"time"

	"github.com/proclock/proclock/internal/lockrec"
	"github.com/proclock/proclock/internal/wake"
)

// ErrRemoved is matched by a lost lock's error (Lock.Err) when one of its
// files is no longer at its path: removed or renamed away, its directory
// removed or moved, its filesystem unmounted.
var ErrRemoved = lockrec.ErrRemoved

// ErrReplaced is matched by a lost lock's error when another file is at
// the path of one of its files, or its stamp was written over.
var ErrReplaced = lockrec.ErrReplaced

// checker looks at a held lock's files: nil while whole, else the cause
// of its loss. At is the path it judges, made absolute when taken.
type checker interface {
	Check() error
	At() string
}

// lossLookEvery is how often a held lock is looked at for its loss on a
// platform that cannot tell of changes (no wake.ChangeWatcher).
const lossLookEvery = time.Second

// Lost returns a channel that is closed once the lock is known to be lost
// without Release: its file or its mark (path.holder) removed or replaced,
// or its directory or filesystem gone. Err then says why. A Release never
// closes it.
//
// The first call to Lost or Err starts watching (docs/design.md, "A lock
// that knows when it is lost"). A platform whose Clock's sleeps return at
// once needs a Wake that tells of changes, or the looks spin.
//
// A lost lock is not given up, nor taken back (docs/protocol.md, "A held
// lock's files removed"): its holder should stop what it does under it,
// Release it, and Acquire it again if need be.
func (l *Lock) Lost() <-chan struct{} {
	l.watchOnce.Do(l.startWatch)
	return l.watch.lost
}

// Err returns nil while the lock is held, or after a clean Release; once
// it is known lost (Lost), a *LostError, matching ErrLost, wrapping a cause
// that matches ErrRemoved or ErrReplaced.
func (l *Lock) Err() error {
	l.watchOnce.Do(l.startWatch)
	select {
	case <-l.watch.lost:
		return l.watch.err
	default:
		return nil
	}
}

// lossWatch is a held lock's watch for its loss, started by the first
// Lost or Err (Lock.watchOnce): a lock never asked costs no allocation.
type lossWatch struct {
	lost chan struct{}      // closed on loss
	err  error              // the *LostError, set before lost is closed
	quit context.CancelFunc // ends the watcher; nil without one
	done chan struct{}      // closed when the watcher has returned
}

// neverLost is the channel of every lock released before it was asked.
var neverLost = make(chan struct{})

// startWatch starts the watch and looks at the lock. Watching starts
// before the look, so that nothing after the look goes unseen.
func (l *Lock) startWatch() {
	l.watch.lost = make(chan struct{})
	if l.check == nil {
		return
	}
	changes := l.watchChanges()
	if err := l.check.Check(); err != nil {
		l.lose(err)
		if changes != nil {
			changes.Stop()
		}
		return
	}
	ctx, quit := context.WithCancel(context.Background())
	l.watch.quit, l.watch.done = quit, make(chan struct{})
	go l.watchFor(ctx, changes)
}

// watchChanges starts the platform's watch of the lock's files; nil when
// it has none: the lock is then looked at every lossLookEvery.
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
func (l *Lock) watchFor(ctx context.Context, changes wake.Changes) {
	defer close(l.watch.done)
	if changes != nil {
		defer changes.Stop()
	}
	for {
		last := false
		if changes != nil {
			select {
			case _, ok := <-changes.C():
				last = !ok // the watch can see no more
			case <-ctx.Done():
			}
		} else if l.p.Time().Sleep(ctx, lossLookEvery) != nil {
			return
		}
		if ctx.Err() != nil {
			return // released: no look after stopWatch
		}
		if err := l.check.Check(); err != nil {
			l.lose(err)
			return
		}
		if last {
			return
		}
	}
}

// lose records the loss and tells of it.
func (l *Lock) lose(cause error) {
	l.watch.err = &LostError{Path: l.path, Err: cause}
	close(l.watch.lost)
}

// stopWatch ends the watch before the lock is let go (or handed over):
// no look is made after it returns. l.mu is held.
func (l *Lock) stopWatch() {
	l.watchOnce.Do(func() { l.watch.lost = neverLost })
	if l.watch.quit != nil {
		l.watch.quit()
		<-l.watch.done
		l.watch.quit = nil
	}
}
