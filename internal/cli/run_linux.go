package cli

import (
	"io"
	"os/exec"
	"runtime"
	"syscall"
)

// canStartProcesses: proclock run can start COMMAND here.
const canStartProcesses = true

// startTied starts cmd with SIGKILL as its parent-death signal, so that
// COMMAND dies with proclock, however proclock dies, and watches it.
//
// g, COMMAND's guard, gets a pidfd of COMMAND taken when it was created,
// so that a killed proclock's job dies with it (guard_linux.go).
//
// proclock is the subreaper of COMMAND's processes, and reports COMMAND's
// end only once the last of them has ended (run_job_linux.go).
func startTied(cmd *exec.Cmd, g *guard, w io.Writer) (<-chan childEvent, error) {
	if err := becomeSubreaper(); err != nil {
		return nil, err
	}
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
	pidfd := g.tiePidfd(cmd.SysProcAttr)
	started := make(chan error, 1)
	events := make(chan childEvent, 1)
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
		pauseAt("started")
		g.watch(cmd.Process.Pid, *pidfd, w)
		pauseAt("watched")
		if *pidfd >= 0 {
			syscall.Close(*pidfd)
		}
		started <- nil
		watchJob(cmd.Process.Pid, events)
	}()
	if err := <-started; err != nil {
		return nil, err
	}
	return events, nil
}
