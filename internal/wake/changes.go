package wake

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
