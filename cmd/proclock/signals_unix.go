//go:build unix

package main

import (
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// relayed are the signals proclock run passes on to COMMAND.
var relayed = []os.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP}

// relay passes sig on to COMMAND, unless the terminal has delivered it
// already.
func relay(p *os.Process, sig os.Signal) error {
	if sig == syscall.SIGINT && foregroundJob() {
		// A Ctrl-C went to the whole foreground process group, COMMAND
		// included; a second SIGINT would read as "press again to quit
		// at once" to many programs.
		return nil
	}
	return p.Signal(sig)
}

// foregroundJob reports whether proclock's process group, which COMMAND
// shares, is the foreground job of its controlling terminal.
func foregroundJob() bool {
	tty, err := os.Open("/dev/tty")
	if err != nil {
		return false // no controlling terminal
	}
	defer tty.Close()
	fg, err := unix.IoctlGetInt(int(tty.Fd()), unix.TIOCGPGRP)
	if err != nil {
		return false
	}
	ours, err := unix.Getpgid(0)
	return err == nil && fg == ours
}

// exitStatusOf is proclock's exit code for COMMAND's end: its exit status,
// or 128+N when signal N killed it, as shells report it.
func exitStatusOf(ps *os.ProcessState) int {
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ps.ExitCode()
}
