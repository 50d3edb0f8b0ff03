package platform

// changeWatch is internal/wake's Changes, which a Waker's WatchChanges
// returns: an alias of the one interface, so that platform, which
// internal/wake imports, implements it without naming it.
type changeWatch = interface {
	C() <-chan struct{}
	Stop()
}
