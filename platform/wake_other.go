//go:build !linux

package platform

// nativeWake is nil: waits sleep on the clock.
var nativeWake Waker
