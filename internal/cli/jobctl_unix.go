//go:build unix && !aix

package cli

import "golang.org/x/sys/unix"

// jobControl: proclock follows COMMAND's stops and moves the terminal
// between their groups here (signals_unix.go).
const jobControl = true

// waitStops makes wait4 report COMMAND's stops.
const waitStops = unix.WUNTRACED

// setForeground makes pgid the foreground group of the terminal tty.
func setForeground(tty, pgid int) error {
	return unix.IoctlSetPointerInt(tty, unix.TIOCSPGRP, pgid)
}
