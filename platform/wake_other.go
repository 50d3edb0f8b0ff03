//go:build !linux

package platform

// nativeWake is nil: waits sleep on the clock. (kqueue on darwin and the
// BSDs, ReadDirectoryChangesW on windows could serve; not done yet.)
var nativeWake Waker
