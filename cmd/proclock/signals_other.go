//go:build !unix

package main

import (
	"os"
	"syscall"
)

// relayed are the signals proclock run catches, so that it outlives them
// until COMMAND exits.
var relayed = []os.Signal{os.Interrupt, syscall.SIGTERM}

// relay does nothing: windows delivers a console's Ctrl-C and close events
// to every process attached to it, COMMAND included, and has no way to
// send them to one process.
func relay(*os.Process, os.Signal) error { return nil }

// exitStatusOf is proclock's exit code for COMMAND's end: its exit status.
func exitStatusOf(ps *os.ProcessState) int { return ps.ExitCode() }
