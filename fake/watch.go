package fake

import (
	"os"
	"slices"
	"strings"
	"sync"

	"github.com/proclock/proclock/internal/wake"
)

var _ wake.ChangeWatcher = procPlatform{}

// WatchChanges is the process's wake.ChangeWatcher: a held lock's
// watch of its files. It tells of every operation of the world, by any
// process or the world itself (World.FS), that may change one of names in
// dir, or dir or a directory above it: a removal, a rename or link from or
// to one, a write or truncation, an open that creates or truncates. What
// SwapInode and ReuseInode stage, which no hook sees, it does not tell of.
// It is told in the goroutine that makes the change, before that
// operation returns, so a test that removes a lock's file through
// World.FS and then waits on the lock's Lost channel needs nothing else.
// The watch ends (C closed) when the process dies.
func (pp procPlatform) WatchChanges(dir string, names []string) (wake.Changes, error) {
	p := pp.p
	if !p.Alive() {
		return nil, p.fail("watch")
	}
	w := &changeWatch{dir: clean(dir), c: make(chan struct{}, 1), p: p}
	for _, name := range names {
		w.paths = append(w.paths, clean(dir+"/"+name))
	}
	w.remove = p.u.hooks.add(&hook{op: OpAny, when: After, fn: w.look})
	p.mu.Lock()
	if p.watches == nil {
		p.watches = map[*changeWatch]struct{}{}
	}
	p.watches[w] = struct{}{}
	p.mu.Unlock()
	if !p.Alive() {
		w.end() // killed while it was set up
	}
	return w, nil
}

// changeWatch is one WatchChanges watch.
type changeWatch struct {
	dir    string   // cleaned
	paths  []string // the watched names' paths, cleaned
	p      *Process
	remove func()

	mu    sync.Mutex
	c     chan struct{}
	ended bool // c closed, or Stop called
}

func (w *changeWatch) C() <-chan struct{} { return w.c }

func (w *changeWatch) Stop() {
	w.remove()
	w.p.mu.Lock()
	delete(w.p.watches, w)
	w.p.mu.Unlock()
	w.mu.Lock()
	w.ended = true
	w.mu.Unlock()
}

// end closes C: the process died.
func (w *changeWatch) end() {
	w.remove()
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.ended {
		w.ended = true
		close(w.c)
	}
}

// look runs after every operation of the world.
func (w *changeWatch) look(ev Event) error {
	if !mutates(ev) || !w.touches(ev.Path) && !w.touches(ev.NewPath) {
		return nil
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.ended {
		select {
		case w.c <- struct{}{}:
		default: // one is pending already
		}
	}
	return nil
}

// touches reports whether a change of path may change what the watched
// names are: it is one of them, or dir, or a directory above it.
func (w *changeWatch) touches(path string) bool {
	if path == "" {
		return false
	}
	return slices.Contains(w.paths, path) || path == w.dir || path == "/" ||
		strings.HasPrefix(w.dir, path+"/")
}

// mutates reports whether ev may have changed a name or a file's bytes.
func mutates(ev Event) bool {
	switch ev.Op {
	case OpRemove, OpRename, OpRenameNoReplace, OpLink, OpWrite, OpTruncate:
		return true
	case OpOpen:
		return ev.Flag&(os.O_CREATE|os.O_TRUNC) != 0
	}
	return false
}
