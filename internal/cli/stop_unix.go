//go:build unix

package cli

import "syscall"

// killGroup sends SIGKILL to the process group pgid; a group with no
// process left is nothing to kill.
func killGroup(pgid int) { _ = syscall.Kill(-pgid, syscall.SIGKILL) }

// groupLives reports whether the process group pgid has a process left.
func groupLives(pgid int) bool {
	err := syscall.Kill(-pgid, 0)
	return err == nil || err == syscall.EPERM
}
