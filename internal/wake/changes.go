package wake

// ChangeWatcher is an optional power of a platform.Waker (Platform.Wake):
// telling a holder, as soon as it happens, that something may have
// happened to its lock's files, so that it learns of a lost lock without
// looking again and again (docs/design.md, "A lock that knows when it is
// lost"). A platform without it is looked at periodically instead.
type ChangeWatcher interface {
	// WatchChanges starts watching names (base names of entries of the
	// directory dir) for any change: created, removed, renamed away or
	// onto, written; and dir itself removed or moved away, a filesystem
	// mounted or unmounted, events lost. The Changes it returns tells of
	// them; the caller stops it.
	//
	// It may tell of a change that is none (the caller looks, and finds
	// the lock whole), and tells of many at once as one. It costs nothing
	// while nothing changes: no goroutine of its own per watch, no
	// system call.
	WatchChanges(dir string, names []string) (Changes, error)
}

// Changes is a watch that WatchChanges started. It is an alias of an
// interface literal, so that platform, which this package imports,
// returns one (its changeWatch) without naming it.
type Changes = interface {
	// C receives a value when a watched name may have changed since the
	// last one was received (at most one is pending). It is closed when
	// the watch can see nothing more (a fake process killed): the
	// caller looks once more, and watches no longer.
	C() <-chan struct{}
	// Stop ends the watch; once it has returned, C receives nothing
	// more. It may be called more than once.
	Stop()
}
