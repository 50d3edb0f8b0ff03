package fake

import (
	"slices"
	"sync"
)

// Op names a filesystem operation, as hooks match it.
type Op string

// The operations hooks can match. Operations on an open file (read, write,
// close, ...) match the name the file was opened with.
const (
	// OpAny, given to Hook, matches every operation.
	OpAny Op = ""
	// OpOpen is OpenFile and OpenNoFollow.
	OpOpen Op = "open"
	// OpRead is File.Read, File.ReadAt and File.Readdirnames.
	OpRead Op = "read"
	// OpWrite is File.Write and File.WriteAt.
	OpWrite Op = "write"
	// OpClose is File.Close.
	OpClose Op = "close"
	// OpStat is Lstat, FileID, FileIDOf, DirID and File.Stat (and the
	// stat of SQLite's VFS).
	OpStat Op = "stat"
	// OpRename is Rename; it matches the old name or the new one.
	OpRename Op = "rename"
	// OpRenameNoReplace is RenameNoReplace (fsx.NoReplaceRenamer);
	// it matches the old name or the new one.
	OpRenameNoReplace Op = "rename-noreplace"
	// OpRemove is Remove.
	OpRemove Op = "remove"
	// OpLink is Link; it matches the old name or the new one.
	OpLink Op = "link"
	// OpTruncate is File.Truncate.
	OpTruncate Op = "truncate"
	// OpSync is SQLite's xSync on a file its VFS opened.
	OpSync Op = "sync"
	// OpLock is SQLite's xLock, xUnlock and xCheckReservedLock on a file
	// its VFS opened: a change (or a look) at the world's lock table, not
	// the file's bytes. It matches the name SQLite opened the file with.
	OpLock Op = "lock"
)

// When says whether a hook runs before or after its operation.
type When int

const (
	// Before hooks run before the operation; a non-nil error from one
	// makes the operation fail with it, having done nothing.
	Before When = iota + 1
	// After hooks run after the operation and see its error; a non-nil
	// error from one is returned instead, though the operation happened.
	After
)

// Event is what a hook is told of the operation it runs for.
type Event struct {
	Op Op
	// Call is the call within Op, as the operation's errors name it:
	// "open", "stat", "lstat", "fileid", "dirid", "readat", "writeat", ...
	Call string
	// Handle is set for an operation on an open file (File's methods,
	// and FileIDOf): it acts on the file the handle has, whatever Path
	// names now. Otherwise the operation resolves Path.
	Handle bool
	// Path is the path acted on, cleaned: absolute, slash-separated,
	// symlinks not resolved. For Rename and Link it is the old name.
	Path string
	// NewPath is the new name for Rename, RenameNoReplace and Link; ""
	// otherwise.
	NewPath string
	When    When
	// Flag is the open(2) flags of an OpOpen (os.O_CREATE, os.O_EXCL,
	// os.O_TRUNC, ...; 0 for a read-only open); 0 for other operations.
	Flag int
	// PID is the pid of the process acting (in its own pid namespace),
	// or 0 for the world's own view (World.FS).
	PID int
	// Err is the operation's error, for After hooks.
	Err error
	// Sleep is set for a step that waits (a blocking lock): it tells
	// whether what it waits for has come. A hook that holds the process
	// there (a scheduler) lets it go once Sleep.Ready reports true, or
	// kills it; one that lets it go earlier only costs the wait a sleep
	// on the clock.
	Sleep *Sleep
}

// Sleep is a step's wait (Event.Sleep).
type Sleep struct{ ready func() bool }

// Ready reports whether what the wait waits for has come: it would end
// now. It takes no lock a hook holds.
func (s *Sleep) Ready() bool { return s.ready() }

type hook struct {
	op   Op
	path string // cleaned; "" matches every path
	when When
	fn   func(Event) error
}

func (h *hook) matches(ev Event) bool {
	return h.when == ev.When &&
		(h.op == OpAny || h.op == ev.Op) &&
		(h.path == "" || h.path == ev.Path || h.path == ev.NewPath)
}

// hooks is the world's list of hooks. The list is replaced, never changed
// in place, so an operation runs the hooks it found when it started.
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
func (hs *hooks) fire(ev Event) error {
	if ev.Path == "" {
		return nil
	}
	hs.mu.Lock()
	list := hs.list
	hs.mu.Unlock()
	var first error
	for _, h := range list {
		if !h.matches(ev) {
			continue
		}
		if err := h.fn(ev); err != nil && first == nil {
			first = err
			if ev.When == Before {
				break
			}
		}
	}
	return first
}

// Hook makes fn run every time op is performed on path (any operation with
// OpAny, any path with ""), before or after it, by any process of any host
// of this world, and by the world's own view (Event.PID 0). path is
// matched after cleaning, without resolving symlinks.
//
// fn runs outside the world's locks, in the goroutine performing the
// operation: it may block (to stall a process between two steps), kill the
// acting process (to crash it there), or change the world itself. Changing
// the world through World.FS runs hooks too (the World's staging methods
// run none), so a hook that does so on the path it watches should skip
// Event.PID 0.
//
// The returned function removes the hook; an operation already running may
// still call it once. Hook panics if fn is nil or when is neither Before
// nor After.
func (w *World) Hook(op Op, path string, when When, fn func(Event) error) (remove func()) {
	if fn == nil || (when != Before && when != After) {
		panic("fake: Hook needs a function and Before or After")
	}
	if path != "" {
		path = clean(path)
	}
	return w.u.hooks.add(&hook{op: op, path: path, when: when, fn: fn})
}
