package platform

// changeWatch is internal/wake's Changes, spelled out: wake imports platform.
type changeWatch = interface {
	C() <-chan struct{}
	Stop()
}
