//go:build !unix && !windows

package cli

import (
	"errors"
	"io"
	"os/exec"
)

// canStartProcesses: wasip1 and js cannot start processes; proclock run
// says so before it touches the lock.
const canStartProcesses = false

func startTied(*exec.Cmd, io.Writer) (<-chan error, error) {
	return nil, errors.New("starting a process is not supported here")
}
