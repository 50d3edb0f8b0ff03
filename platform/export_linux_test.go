package platform

// NewTestWaker returns the linux Waker, calling armed once each Wait
// watches everything, just before it waits.
func NewTestWaker(armed func()) Waker { return inotifyWaker{armed: armed} }
