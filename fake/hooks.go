package fake

import (
	"fmt"
	"slices"
	"sync"

	"github.com/proclock/proclock/fake/internal/sqlfile"
)

// The operations hooks match (World.Before).
const (
	opOpen            = "open"
	opRead            = "read"
	opWrite           = "write"
	opClose           = "close"
	opStat            = "stat"
	opRename          = "rename"
	opRenameNoReplace = "rename-noreplace"
	opRemove          = "remove"
	opLink            = "link"
	opTruncate        = "truncate"
	opSync            = "sync"
	opLock            = "lock"
)

var ops = []string{opOpen, opRead, opWrite, opClose, opStat, opRename, opRenameNoReplace,
	opRemove, opLink, opTruncate, opSync, opLock}

// Event is what a hook is told of the operation it runs for.
type Event struct {
	Op     string // as World.Before lists them
	Call   string // the call, as errors name it: "lstat", "fileid", "readat", "lockw", ...
	Handle bool   // on an open file, whatever Path names now
	// Path is the path acted on, cleaned, symlinks not resolved; the old
	// name of a rename or link, whose new one is NewPath.
	Path, NewPath string
	Flag          int   // an open's os.O_ flags
	PID           int   // the acting process's, or 0 for World.FS
	Err           error // the operation's, for an After hook
	// Ready is set for a step that waits (LockRange): it reports whether
	// the wait would end now, for a hook that holds the process there.
	Ready func() bool
}

type hook struct {
	op    string // "" matches every operation
	path  string // cleaned; "" matches every path
	after bool
	fn    func(Event) error
}

// hooks is the world's list, replaced and never changed in place, so an
// operation runs those it found when it started.
type hooks struct {
	mu   sync.Mutex
	list []*hook
}

func (hs *hooks) add(h *hook) (remove func()) {
	hs.change(func(l []*hook) []*hook { return append(l, h) })
	return sync.OnceFunc(func() {
		hs.change(func(l []*hook) []*hook { return slices.DeleteFunc(l, func(k *hook) bool { return k == h }) })
	})
}

func (hs *hooks) change(edit func([]*hook) []*hook) {
	hs.mu.Lock()
	defer hs.mu.Unlock()
	hs.list = edit(slices.Clone(hs.list))
}

// fire runs the hooks that match ev, outside the world's locks, in order;
// a Before hook's error stops the others.
func (hs *hooks) fire(ev Event, after bool) error {
	if ev.Path == "" {
		return nil
	}
	hs.mu.Lock()
	list := hs.list
	hs.mu.Unlock()
	var first error
	for _, h := range list {
		if h.after != after || h.op != "" && h.op != ev.Op || h.path != "" && h.path != ev.Path && h.path != ev.NewPath {
			continue
		}
		if err := h.fn(ev); err != nil && first == nil {
			first = err
			if !after {
				break
			}
		}
	}
	return first
}

// Before makes fn run before every operation op on path, by any process
// and by World.FS (Event.PID 0); an error from fn makes the operation fail
// with it, having done nothing. op "" matches every operation, path ""
// every path, matched cleaned, symlinks not resolved (a file by the name
// it was opened with). The operations:
//
//	open      OpenFile, OpenNoFollow, OpenLockable
//	read      File.Read, ReadAt, Readdirnames
//	write     File.Write, WriteAt
//	close     File.Close
//	stat      Lstat, FileID, FileIDOf, DirID, File.Stat (and SQLite's)
//	rename    Rename (matching the old name or the new)
//	rename-noreplace  RenameNoReplace (the old name or the new)
//	remove    Remove
//	link      Link (the old name or the new)
//	truncate  File.Truncate
//	sync      SQLite's xSync
//	lock      the lock table: byte-range locks and SQLite's xLock, xUnlock
//	          and xCheckReservedLock
//
// fn runs in the goroutine performing the operation: it may block (a
// stall between two steps), kill the process (a crash there), or change
// the world (World.FS runs hooks, the staging methods none). remove
// removes the hook; an operation under way may still call it once.
// Before panics if fn is nil or op unknown.
func (w *World) Before(op, path string, fn func(Event) error) (remove func()) {
	return w.hook(op, path, false, fn)
}

// After makes fn run after every operation op on path, as Before does,
// seeing its error; an error from fn is returned instead, though the
// operation happened.
func (w *World) After(op, path string, fn func(Event) error) (remove func()) {
	return w.hook(op, path, true, fn)
}

func (w *World) hook(op, path string, after bool, fn func(Event) error) func() {
	if fn == nil || op != "" && !slices.Contains(ops, op) {
		panic(fmt.Sprintf("fake: a hook needs a function and a known operation, not %q", op))
	}
	if path != "" {
		path = sqlfile.Clean(path)
	}
	return w.u.fs.hooks.add(&hook{op: op, path: path, after: after, fn: fn})
}
