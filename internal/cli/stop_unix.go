//go:build unix

package cli

import (
	"errors"
	"syscall"
)

// killGroup sends SIGKILL to the process group pgid; a group with no
// process left is nothing to kill.
func killGroup(pgid int) { _ = syscall.Kill(-pgid, syscall.SIGKILL) }

// groupGone reports whether no process of the group pgid is left.
func groupGone(pgid int) bool { return errors.Is(syscall.Kill(-pgid, 0), syscall.ESRCH) }
