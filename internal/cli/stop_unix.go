//go:build unix

package cli

import "syscall"

// killGroup sends SIGKILL to the process group pgid; a group with no
// process left is nothing to kill.
func killGroup(pgid int) { _ = syscall.Kill(-pgid, syscall.SIGKILL) }
