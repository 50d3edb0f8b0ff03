//go:build !proclockhooks || !linux

package cli

// pauseAt marks a start-up step of proclock run (pauseEnv), at which a
// test build (tag proclockhooks) stops to be killed there. It does
// nothing here.
func pauseAt(string) {}
