package main

import (
	"io"
	"os/exec"
	"runtime"
	"syscall"
)

// canStartProcesses: proclock run can start COMMAND here.
const canStartProcesses = true

// startTied starts cmd with SIGKILL as its parent-death signal, so that
// COMMAND dies with proclock, however proclock dies.
func startTied(cmd *exec.Cmd, _ io.Writer) (<-chan error, error) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	started := make(chan error, 1)
	exited := make(chan error, 1)
	go func() {
		// Linux sends the parent-death signal when the thread that
		// started the child ends, not the process: this goroutine keeps
		// its thread until COMMAND is reaped, so that Go never retires
		// that thread under a live COMMAND.
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		if err := cmd.Start(); err != nil {
			started <- err
			return
		}
		started <- nil
		exited <- cmd.Wait()
	}()
	if err := <-started; err != nil {
		return nil, err
	}
	return exited, nil
}
