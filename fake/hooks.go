package fake

import (
	"fmt"
	"slices"
	"sync"
)

// The operations hooks match, as Event.Op names them (World.Before).
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
	// Op is the operation, as World.Before lists them.
	Op string
	// Call is the call within Op, as the operation's errors name it:
	// "open", "stat", "lstat", "fileid", "dirid", "readat", "lockw", ...
	Call string
	// Handle is set for an operation on an open file: it acts on that
	// file, whatever Path names now.
	Handle bool
	// Path is the path acted on, cleaned, symlinks not resolved; the old
	// name of a rename or link, whose new one is NewPath.
	Path, NewPath string
	// Flag is an open's os.O_ flags (0 for read-only); 0 otherwise.
	Flag int
	// PID is the acting process's pid, or 0 for the world's own FS.
	PID int
	// Err is the operation's error, for an After hook.
	Err error
	// Ready is set for a step that waits (LockRange): it reports, taking
	// no lock a hook holds, whether the wait would end now. A hook that
	// holds the process there (a scheduler) lets it go once it does.
	Ready func() bool
}

type hook struct {
	op    string // "" matches every operation
	path  string // cleaned; "" matches every path
	after bool
	fn    func(Event) error
}

func (h *hook) matches(ev Event, after bool) bool {
	return h.after == after && (h.op == "" || h.op == ev.Op) &&
		(h.path == "" || h.path == ev.Path || h.path == ev.NewPath)
}

// hooks is the world's list, replaced and never changed in place, so an
// operation runs the hooks it found when it started.
type hooks struct {
	mu   sync.Mutex
	list []*hook
}

// add adds h; the function it returns removes it.
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

// fire runs, outside every lock of the world, the hooks that match ev, in
// the order they were added; a Before hook's error stops the others.
func (hs *hooks) fire(ev Event, after bool) error {
	if ev.Path == "" {
		return nil
	}
	hs.mu.Lock()
	list := hs.list
	hs.mu.Unlock()
	var first error
	for _, h := range list {
		if !h.matches(ev, after) {
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
// of any host of this world and by the world's own FS (Event.PID 0); a
// non-nil error from fn makes the operation fail with it, having done
// nothing. op "" matches every operation, path "" every path; path is
// matched cleaned, symlinks not resolved, and an operation on an open
// file matches the name it was opened with. The operations:
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
// fn runs outside the world's locks, in the goroutine performing the
// operation: it may block (to stall a process between two steps), kill
// the acting process (to crash it there), or change the world (through
// World.FS, which runs hooks: skip Event.PID 0 to avoid recursion; the
// World's staging methods run none). The function returned removes the
// hook; an operation already running may still call it once. Before
// panics if fn is nil or op is not one of the above.
func (w *World) Before(op, path string, fn func(Event) error) (remove func()) {
	return w.hook(op, path, false, fn)
}

// After makes fn run after every operation op on path, as Before does,
// seeing its error (Event.Err); a non-nil error from fn is returned
// instead, though the operation happened.
func (w *World) After(op, path string, fn func(Event) error) (remove func()) {
	return w.hook(op, path, true, fn)
}

func (w *World) hook(op, path string, after bool, fn func(Event) error) func() {
	if fn == nil || op != "" && !slices.Contains(ops, op) {
		panic(fmt.Sprintf("fake: a hook needs a function and a known operation, not %q", op))
	}
	if path != "" {
		path = clean(path)
	}
	return w.u.hooks.add(&hook{op: op, path: path, after: after, fn: fn})
}
