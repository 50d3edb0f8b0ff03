//go:build !unix

package cli

import (
	"io"
	"os"
	"os/exec"
	"syscall"
)

// relayed are the signals proclock run catches, so that it outlives them
// until COMMAND exits. None is passed on: windows delivers a console's
// Ctrl-C and close events to every process attached to it, COMMAND
// included, and has no way to send them to one process.
var relayed = []os.Signal{os.Interrupt, syscall.SIGTERM}

// passedOn: windows has no other signals to pass on.
var passedOn []os.Signal

// shell runs -c's COMMAND when SHELL is unset: sh as PATH finds it.
const shell = "sh"

// supervise starts COMMAND and waits for it to end, outliving the signals
// it catches. It returns the exit code for COMMAND's end; there is no
// signal that killed it to tell.
// There is no guard here (g is nil).
func supervise(cmd *exec.Cmd, sigs <-chan os.Signal, stderr io.Writer, g *guard) (int, os.Signal) {
	exited, err := startTied(cmd, stderr)
	if err != nil {
		return cannotStart(stderr, cmd.Args[0], err), nil
	}
	for {
		select {
		case <-sigs:
		case err := <-exited:
			if cmd.ProcessState != nil {
				return cmd.ProcessState.ExitCode(), nil
			}
			complain(stderr, err)
			return exitUsage, nil
		}
	}
}

// waitInBackground waits for a started cmd on a goroutine; the channel
// gets Wait's error.
func waitInBackground(cmd *exec.Cmd) <-chan error {
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	return exited
}

// dieOf: proclock ends with 128+N here.
func dieOf(os.Signal) {}
