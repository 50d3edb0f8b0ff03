package main

import (
	"io"
	"os/exec"
	"syscall"
)

// canStartProcesses: proclock run can start COMMAND here.
const canStartProcesses = true

// startTied starts cmd with SIGKILL as its parent-death signal, so that
// COMMAND dies with proclock. On freebsd it follows the parent process,
// not a thread, so no thread needs holding.
func startTied(cmd *exec.Cmd, _ io.Writer) (<-chan error, error) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	return waitInBackground(cmd), nil
}
