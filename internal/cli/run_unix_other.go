//go:build unix && !linux && !freebsd

package cli

import (
	"io"
	"os/exec"
)

// canStartProcesses: proclock run can start COMMAND here.
const canStartProcesses = true

// startTied starts cmd and watches it. darwin and the other unixes have no
// parent-death signal that a parent can set up for its child, so a
// proclock killed with SIGKILL leaves COMMAND running without the lock;
// the help says so. The signals of relayed are passed on instead.
func startTied(cmd *exec.Cmd, _ *guard, _ io.Writer) (<-chan childEvent, error) {
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	events := make(chan childEvent, 1)
	go watch(cmd.Process.Pid, events)
	return events, nil
}
