package cli

import (
	"io"
	"os/exec"
	"syscall"
)

// canStartProcesses: proclock run can start COMMAND here.
const canStartProcesses = true

// startTied starts cmd with SIGKILL as its parent-death signal, so that
// COMMAND dies with proclock, and watches it. On freebsd the signal
// follows the parent process, not a thread, so no thread needs holding.
func startTied(cmd *exec.Cmd, _ *guard, _ io.Writer) (<-chan childEvent, error) {
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	events := make(chan childEvent, 1)
	go watch(cmd.Process.Pid, events)
	return events, nil
}
